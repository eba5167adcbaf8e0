// A real OpenID Connect provider (npm's oidc-provider) for the browser tests and for local
// development. It signs in whoever types an e-mail address, as that address, with
// email_verified=true: never expose it beyond loopback.
//
//   node end2end/idp/oidc.mjs --port 4455 --client-id ID --client-secret S \
//        --redirect-uri http://127.0.0.1:3000/auth/oidc/callback [--dev] [--staff]
//
// With --staff it is the vendor's staff provider for the console: the sign-in form also asks
// which groups the person is in, `/userinfo` lists them under `groups` (scope `groups`), and
// `POST /groups` (form: email, groups=a,b) changes them, as an admin at a real provider
// would: the console asks on every request, so the change counts at the next one.
//
// The issuer is http://localhost:PORT: a different site from an app on 127.0.0.1, so the
// browser treats the round trip as cross-site, as it is in production.
import http from 'node:http';
import { parseArgs } from 'node:util';
import Provider from 'oidc-provider';

const { values: args } = parseArgs({
  options: {
    port: { type: 'string', default: '4455' },
    'client-id': { type: 'string', default: 'tidemark-dev' },
    'client-secret': { type: 'string', default: 'tidemark-dev-secret' },
    'redirect-uri': { type: 'string', multiple: true, default: ['http://127.0.0.1:3000/auth/oidc/callback'] },
    'default-email': { type: 'string', default: '' },
    dev: { type: 'boolean', default: false },
    staff: { type: 'boolean', default: false },
  },
});

const port = Number(args.port);
const issuer = `http://localhost:${port}`;
const label = (args.dev
  ? 'Development sign-in: for trying Tidemark locally, not for production'
  : 'Test identity provider') + (args.staff ? ' (the vendor\'s staff)' : '');
// The staff groups the development console maps to roles (scripts/run.sh).
const STAFF_GROUPS = ['vendor-admins', 'sellers', 'helpdesk', 'everyone'];
// Each person's groups now, by e-mail address.
const groupsOf = new Map();

const provider = new Provider(issuer, {
  clients: [{
    client_id: args['client-id'],
    client_secret: args['client-secret'],
    redirect_uris: args['redirect-uri'],
    grant_types: ['authorization_code'],
    response_types: ['code'],
  }],
  claims: { openid: ['sub'], email: ['email', 'email_verified'], groups: ['groups'] },
  scopes: ['openid', 'email', 'groups'],
  // Put the e-mail claims in the ID token too, as large providers do.
  conformIdTokenClaims: false,
  features: { devInteractions: { enabled: false } },
  interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
  cookies: { keys: ['tidemark-test-idp-only'] },
  async findAccount(_ctx, id) {
    return {
      accountId: id,
      claims: async () => ({
        sub: id, email: id, email_verified: true,
        ...(args.staff ? { groups: groupsOf.get(id) ?? [] } : {}),
      }),
    };
  },
  // First-party client: no consent screen.
  async loadExistingGrant(ctx) {
    const grant = new ctx.oidc.provider.Grant({
      clientId: ctx.oidc.client.clientId,
      accountId: ctx.oidc.session.accountId,
    });
    grant.addOIDCScope(args.staff ? 'openid email groups' : 'openid email');
    await grant.save();
    return grant;
  },
});
provider.proxy = false;

const escape = (s) => String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function loginPage(uid, hint) {
  return `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sign in (${escape(label)})</title>
<style>body{font-family:system-ui,sans-serif;max-width:28rem;margin:4rem auto;padding:0 1rem}
.banner{background:#fff3cd;border:1px solid #e0c060;padding:.75rem;border-radius:.5rem}
label,input,button{display:block;width:100%;margin:.5rem 0;font-size:1rem}
input{padding:.5rem}button{padding:.6rem;cursor:pointer}</style></head>
<body><p class="banner" role="note">${escape(label)}</p>
<h1>Sign in</h1>
<form method="post" action="/interaction/${escape(uid)}/login">
<label for="email">E-mail address</label>
<input id="email" name="email" type="email" required value="${escape(hint)}">
${args.staff ? `<fieldset><legend>Groups</legend>${STAFF_GROUPS.map((g) =>
    `<label><input type="checkbox" name="groups" value="${g}"> ${g}</label>`).join('')}</fieldset>` : ''}
<button type="submit">Sign in</button></form></body></html>`;
}

async function readForm(req) {
  let body = '';
  for await (const chunk of req) body += chunk;
  return new URLSearchParams(body);
}

const handle = provider.callback();
const server = http.createServer(async (req, res) => {
  if (req.url === '/favicon.ico') {
    res.writeHead(204);
    return res.end();
  }
  if (args.staff && req.method === 'POST' && req.url === '/groups') {
    const form = await readForm(req);
    const email = form.get('email')?.trim().toLowerCase();
    if (!email) {
      res.writeHead(400);
      return res.end('email is required');
    }
    groupsOf.set(email, (form.get('groups') ?? '').split(',').map((g) => g.trim()).filter(Boolean));
    res.writeHead(204);
    return res.end();
  }
  const match = req.url.match(/^\/interaction\/([^/?]+)(\/login)?/);
  if (!match) return handle(req, res);
  try {
    const details = await provider.interactionDetails(req, res);
    if (req.method === 'POST' && match[2]) {
      const form = await readForm(req);
      const email = form.get('email')?.trim().toLowerCase();
      if (!email) throw new Error('an e-mail address is required');
      if (args.staff) groupsOf.set(email, form.getAll('groups'));
      return await provider.interactionFinished(req, res, { login: { accountId: email } }, { mergeWithLastSubmission: false });
    }
    const hint = details.params.login_hint || args['default-email'];
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(loginPage(details.uid, hint));
  } catch (err) {
    res.writeHead(400, { 'content-type': 'text/plain; charset=utf-8' });
    res.end(`sign-in failed: ${err.message}`);
  }
});
server.listen(port, () => {
  console.log(`OpenID provider (${label}) at ${issuer}`);
});
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => server.close(() => process.exit(0)));
