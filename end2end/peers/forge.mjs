// A stand-in for GitHub's and GitLab's REST APIs that checks every request against their
// OpenAPI descriptions before answering: GitHub's published one (npm @octokit/openapi,
// api.github.com) and the GitLab subset in gitlab-openapi.json (GitLab's own description is
// not on any package registry). A request that does not conform is answered 422 and recorded,
// so the CLI's tests fail on it. Behind the checks it keeps comments, notes and statuses in
// memory, like the forges do, so "one comment, updated" can be observed.
//
//   node end2end/peers/forge.mjs --port 4600 --token SECRET
//
//   GitHub at http://127.0.0.1:PORT/github        (GITHUB_API_URL)
//   GitLab at http://127.0.0.1:PORT/gitlab/api/v4 (CI_API_V4_URL)
//   GET /__state: { comments, statuses, failures, requests }
//
// Test use only.
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import OpenAPIBackendModule from 'openapi-backend';

const OpenAPIBackend = OpenAPIBackendModule.default ?? OpenAPIBackendModule.OpenAPIBackend ?? OpenAPIBackendModule;
const require = createRequire(import.meta.url);
const here = path.dirname(fileURLToPath(import.meta.url));
const { values: args } = parseArgs({
  options: { port: { type: 'string' }, token: { type: 'string' } },
});
const token = args.token;

const state = { comments: [], statuses: [], failures: [], requests: [] };
let nextId = 1000;

const githubSpec = JSON.parse(
  fs.readFileSync(require.resolve('@octokit/openapi/generated/api.github.com.json'), 'utf8'),
);
const gitlabSpec = JSON.parse(fs.readFileSync(path.join(here, 'gitlab-openapi.json'), 'utf8'));

const json = (status, body) => ({ status, body });
const page = (items, query) => {
  const per = Number(query.per_page ?? 30);
  const n = Number(query.page ?? 1);
  return items.slice((n - 1) * per, n * per);
};

const github = new OpenAPIBackend({ definition: githubSpec, apiRoot: '/github', quick: true, validate: true });
github.register({
  'issues/list-comments': (c) => {
    const { owner, repo, issue_number } = c.request.params;
    const mine = state.comments.filter((x) => x.forge === 'github' && x.repo === `${owner}/${repo}` && x.issue === Number(issue_number));
    return json(200, page(mine, c.request.query).map(githubComment));
  },
  'issues/create-comment': (c) => {
    const { owner, repo, issue_number } = c.request.params;
    const comment = { forge: 'github', id: nextId++, repo: `${owner}/${repo}`, issue: Number(issue_number), body: c.request.requestBody.body, updates: 0 };
    state.comments.push(comment);
    return json(201, githubComment(comment));
  },
  'issues/update-comment': (c) => {
    const { owner, repo, comment_id } = c.request.params;
    const comment = state.comments.find((x) => x.forge === 'github' && x.repo === `${owner}/${repo}` && x.id === Number(comment_id));
    if (!comment) return json(404, { message: 'Not Found' });
    comment.body = c.request.requestBody.body;
    comment.updates += 1;
    return json(200, githubComment(comment));
  },
  'repos/create-commit-status': (c) => {
    const { owner, repo, sha } = c.request.params;
    const s = { forge: 'github', repo: `${owner}/${repo}`, sha, ...c.request.requestBody };
    state.statuses.push(s);
    return json(201, { id: nextId++, url: `https://api.github.com/repos/${owner}/${repo}/statuses/${sha}`, state: s.state, context: s.context, description: s.description ?? null, target_url: s.target_url ?? null });
  },
  validationFail: (c) => fail('github', c, c.validation.errors),
  notFound: (c) => fail('github', c, ['no such operation in the description']),
  notImplemented: (c) => fail('github', c, [`operation ${c.operation.operationId} is not expected from the CLI`]),
});

const gitlab = new OpenAPIBackend({ definition: gitlabSpec, apiRoot: '/gitlab/api/v4', quick: true, validate: true });
gitlab.register({
  listMergeRequestNotes: (c) => {
    const { id, merge_request_iid } = c.request.params;
    const mine = state.comments.filter((x) => x.forge === 'gitlab' && x.repo === decodeURIComponent(id) && x.issue === Number(merge_request_iid));
    return json(200, page(mine, c.request.query).map(gitlabNote));
  },
  createMergeRequestNote: (c) => {
    const { id, merge_request_iid } = c.request.params;
    const note = { forge: 'gitlab', id: nextId++, repo: decodeURIComponent(id), issue: Number(merge_request_iid), body: c.request.requestBody.body, updates: 0 };
    state.comments.push(note);
    return json(201, gitlabNote(note));
  },
  updateMergeRequestNote: (c) => {
    const { id, note_id } = c.request.params;
    const note = state.comments.find((x) => x.forge === 'gitlab' && x.repo === decodeURIComponent(id) && x.id === Number(note_id));
    if (!note) return json(404, { message: '404 Not found' });
    note.body = c.request.requestBody.body;
    note.updates += 1;
    return json(200, gitlabNote(note));
  },
  setCommitStatus: (c) => {
    const { id, sha } = c.request.params;
    state.statuses.push({ forge: 'gitlab', repo: decodeURIComponent(id), sha, ...c.request.requestBody });
    return json(201, { id: nextId++, sha, status: c.request.requestBody.state });
  },
  validationFail: (c) => fail('gitlab', c, c.validation.errors),
  notFound: (c) => fail('gitlab', c, ['no such operation in the description']),
  notImplemented: (c) => fail('gitlab', c, ['not expected from the CLI']),
});

// The description's own security schemes decide whether a GitLab request is authenticated.
gitlab.registerSecurityHandler('private_token', (c) => c.request.headers['private-token'] === token);
gitlab.registerSecurityHandler('job_token', (c) => c.request.headers['job-token'] === token);
gitlab.register('unauthorizedHandler', (c) => {
  state.failures.push({ forge: 'gitlab', method: c.request.method, path: c.request.path, errors: ['no valid PRIVATE-TOKEN or JOB-TOKEN'] });
  return json(401, { message: '401 Unauthorized' });
});

function githubComment(c) {
  return { id: c.id, body: c.body, html_url: `https://github.com/${c.repo}/pull/${c.issue}#issuecomment-${c.id}` };
}

function gitlabNote(n) {
  return { id: n.id, body: n.body };
}

function fail(forge, c, errors) {
  state.failures.push({ forge, method: c.request.method, path: c.request.path, errors });
  return json(422, { message: 'request does not match the OpenAPI description', errors });
}

function authorised(forge, headers) {
  if (forge === 'github') return headers.authorization === `Bearer ${token}`;
  return headers['private-token'] === token || headers['job-token'] === token;
}

await Promise.all([github.init(), gitlab.init()]);

http
  .createServer((req, res) => {
    let raw = '';
    req.on('data', (d) => (raw += d));
    req.on('end', async () => {
      const url = new URL(req.url, 'http://localhost');
      const send = ({ status, body }) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      if (url.pathname === '/__state') return send(json(200, state));
      const forge = url.pathname.startsWith('/github/') ? 'github' : url.pathname.startsWith('/gitlab/') ? 'gitlab' : null;
      if (!forge) return send(json(404, { message: 'Not Found' }));
      let body;
      try {
        body = raw ? JSON.parse(raw) : undefined;
      } catch {
        state.failures.push({ forge, method: req.method, path: url.pathname, errors: ['body is not JSON'] });
        return send(json(400, { message: 'Problems parsing JSON' }));
      }
      state.requests.push({ forge, method: req.method, path: url.pathname, query: url.search, body });
      if (!authorised(forge, req.headers)) {
        state.failures.push({ forge, method: req.method, path: url.pathname, errors: ['missing or wrong token'] });
        return send(json(401, { message: 'Bad credentials' }));
      }
      if (forge === 'github' && req.headers.accept !== 'application/vnd.github+json') {
        state.failures.push({ forge, method: req.method, path: url.pathname, errors: [`Accept is ${req.headers.accept}`] });
      }
      const request = {
        method: req.method,
        path: url.pathname,
        query: Object.fromEntries(url.searchParams),
        headers: req.headers,
        body,
      };
      try {
        send(await (forge === 'github' ? github : gitlab).handleRequest(request));
      } catch (e) {
        state.failures.push({ forge, method: req.method, path: url.pathname, errors: [String(e)] });
        send(json(500, { message: String(e) }));
      }
    });
  })
  .listen(Number(args.port), '127.0.0.1', () => console.error(`forge peer on ${args.port}`));
