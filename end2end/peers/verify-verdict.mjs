// An independent verifier of Tidemark's signed verdicts: npm `jose` (not our code) checks a
// compact JWS against the published key set. Usage: node verify-verdict.mjs KEYSET.json JWS
// Prints the verified payload as JSON; exits 1 with the reason when it does not verify.
import { readFileSync } from 'node:fs';
import { compactVerify, decodeProtectedHeader, importJWK } from 'jose';

const [keysPath, jws] = process.argv.slice(2);
try {
  const set = JSON.parse(readFileSync(keysPath, 'utf8'));
  const { kid, alg } = decodeProtectedHeader(jws);
  if (alg !== 'EdDSA') throw new Error(`alg ${alg} is not EdDSA`);
  const jwk = set.keys.find((k) => k.kid === kid);
  if (!jwk) throw new Error(`no key ${kid} in the key set`);
  const key = await importJWK({ kty: jwk.kty, crv: jwk.crv, x: jwk.x }, 'EdDSA');
  const { payload } = await compactVerify(jws, key, { algorithms: ['EdDSA'] });
  process.stdout.write(new TextDecoder().decode(payload));
} catch (err) {
  process.stderr.write(`jose: ${err.message}\n`);
  process.exit(1);
}
