// GitHub's own client for the job token endpoint, `@actions/core`'s getIDToken, run against
// the tests' fake of that endpoint (ACTIONS_ID_TOKEN_REQUEST_URL/_TOKEN from the
// environment): the fake is only trusted where the real client accepts it. Prints the token.
import * as core from '@actions/core';

const audience = process.argv[2];
try {
  const token = await core.getIDToken(audience);
  process.stdout.write(token);
} catch (err) {
  process.stderr.write(`getIDToken failed: ${err.message}\n`);
  process.exit(1);
}
