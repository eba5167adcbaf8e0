// A real SAML 2.0 identity provider built with npm's samlify (xml-crypto signatures), for the
// browser tests and the server's refusal tests. SP-initiated only: it receives an
// HTTP-Redirect AuthnRequest at /sso, signs in whoever types an address, and POSTs a signed
// response to the SP's ACS. POST /forge returns responses that are wrong on purpose
// (unsigned, stripped, tampered, wrapped, SHA-1, foreign signer, expired, wrong audience...),
// because a well-behaved IdP cannot be asked for them. Test use only, on loopback.
//
//   node end2end/idp/saml.mjs --port 4466 --sp-entity-id URL --acs-url URL [--entity-id ID]
import fs from 'node:fs';
import http from 'node:http';
import crypto from 'node:crypto';
import zlib from 'node:zlib';
import path from 'node:path';
import { parseArgs } from 'node:util';
import samlifyModule from 'samlify';

const samlify = samlifyModule;

const { values: args } = parseArgs({
  options: {
    port: { type: 'string', default: '4466' },
    'sp-entity-id': { type: 'string' },
    'acs-url': { type: 'string' },
    // Declare this entity id instead of the metadata URL (an IdP chooses its own freely).
    'entity-id': { type: 'string' },
  },
});
const here = path.dirname(new URL(import.meta.url).pathname);
const read = (name) => fs.readFileSync(path.join(here, name), 'utf8');
const keys = {
  idp: { key: read('saml-idp-key.pem'), cert: read('saml-idp-cert.pem') },
  attacker: { key: read('saml-attacker-key.pem'), cert: read('saml-attacker-cert.pem') },
};
const port = Number(args.port);
const base = `http://localhost:${port}`;
const entityID = args['entity-id'] || `${base}/metadata`;
const spEntityId = args['sp-entity-id'];
const acsUrl = args['acs-url'];
const EMAIL_FORMAT = 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress';
const RSA_SHA256 = 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256';
const RSA_SHA1 = 'http://www.w3.org/2000/09/xmldsig#rsa-sha1';

samlify.setSchemaValidator({ validate: async () => 'skipped' });
const idp = samlify.IdentityProvider({
  entityID,
  signingCert: keys.idp.cert,
  privateKey: keys.idp.key,
  nameIDFormat: [EMAIL_FORMAT],
  singleSignOnService: [{ Binding: 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect', Location: `${base}/sso` }],
});

const newId = () => `_${crypto.randomBytes(16).toString('hex')}`;
const iso = (ms) => new Date(ms).toISOString();

/** A base64 SAMLResponse for `email` answering `inResponseTo`, spoiled by `variant`. */
function makeResponse({ email, inResponseTo = '', variant = 'valid', assertionId, target, nameId, nameIdFormat, emailAttribute }) {
  const now = Date.now();
  const values = {
    ID: newId(),
    AssertionID: assertionId || newId(),
    Destination: acsUrl,
    Audience: spEntityId,
    SubjectRecipient: acsUrl,
    Issuer: entityID,
    IssueInstant: iso(now),
    StatusCode: 'urn:oasis:names:tc:SAML:2.0:status:Success',
    ConditionsNotBefore: iso(now - 1000),
    ConditionsNotOnOrAfter: iso(now + 300_000),
    SubjectConfirmationDataNotOnOrAfter: iso(now + 300_000),
    NameIDFormat: nameIdFormat || EMAIL_FORMAT,
    NameID: nameId || email,
    InResponseTo: inResponseTo,
    AuthnStatement: `<saml:AuthnStatement AuthnInstant="${iso(now)}" SessionIndex="${newId()}"><saml:AuthnContext><saml:AuthnContextClassRef>urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport</saml:AuthnContextClassRef></saml:AuthnContext></saml:AuthnStatement>`,
    AttributeStatement: '',
  };
  if (variant === 'expired') {
    values.ConditionsNotBefore = iso(now - 900_000);
    values.ConditionsNotOnOrAfter = iso(now - 600_000);
    values.SubjectConfirmationDataNotOnOrAfter = iso(now - 600_000);
  }
  if (variant === 'wrong-audience') values.Audience = 'https://another-sp.example/saml/metadata';
  if (variant === 'wrong-recipient') {
    values.SubjectRecipient = 'https://another-sp.example/saml/acs';
    values.Destination = 'https://another-sp.example/saml/acs';
  }
  if (variant === 'failed-status') values.StatusCode = 'urn:oasis:names:tc:SAML:2.0:status:Responder';
  let xml = samlify.SamlLib.replaceTagsByValue(samlify.SamlLib.defaultLoginResponseTemplate.context, values);
  // samlify escapes every template value, so the mail attribute goes in after templating.
  if (emailAttribute) {
    xml = xml.replace('</saml:Assertion>', '<saml:AttributeStatement><saml:Attribute Name="email" '
      + 'NameFormat="urn:oasis:names:tc:SAML:2.0:attrname-format:basic"><saml:AttributeValue>'
      + `${escape(emailAttribute)}</saml:AttributeValue></saml:Attribute></saml:AttributeStatement></saml:Assertion>`);
  }
  if (variant !== 'unsigned') {
    const signer = variant === 'foreign-signer' ? keys.attacker : keys.idp;
    xml = samlify.SamlLib.constructSAMLSignature({
      rawSamlMessage: xml,
      referenceTagXPath: "/*[local-name(.)='Response']/*[local-name(.)='Assertion']",
      privateKey: signer.key,
      // samlify wants the certificate's base64 body, as metadata carries it.
      signingCert: signer.cert.replace(/-----[^-]+-----|\s/g, ''),
      signatureAlgorithm: variant === 'sha1' ? RSA_SHA1 : RSA_SHA256,
      isBase64Output: false,
      signatureConfig: {
        prefix: 'ds',
        location: { reference: "/*[local-name(.)='Response']/*[local-name(.)='Assertion']/*[local-name(.)='Issuer']", action: 'after' },
      },
    });
  }
  const signature = /<ds:Signature[\s\S]*?<\/ds:Signature>/;
  if (variant === 'stripped') xml = xml.replace(signature, '');
  if (variant === 'tampered') xml = xml.replace(`>${email}</saml:NameID>`, `>${target}</saml:NameID>`);
  if (variant === 'xsw') {
    // Signature wrapping: an unsigned copy naming `target` goes first; the signed original stays.
    const original = xml.match(/<saml:Assertion[\s\S]*<\/saml:Assertion>/)[0];
    const evil = original
      .replace(signature, '')
      .replace(/ ID="[^"]+"/, ` ID="${newId()}"`)
      .replace(`>${email}</saml:NameID>`, `>${target}</saml:NameID>`);
    xml = xml.replace(original, evil + original);
  }
  if (variant === 'doctype') {
    const lol = '<!ENTITY lol "lol"><!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">'
      + '<!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">';
    xml = `<?xml version="1.0"?><!DOCTYPE samlp:Response [${lol}]>` + xml.replace(`>${email}<`, '>&lol2;<');
  }
  return Buffer.from(xml).toString('base64');
}

/** The ID of an HTTP-Redirect (deflated, base64) AuthnRequest. */
function requestId(samlRequest) {
  const xml = zlib.inflateRawSync(Buffer.from(samlRequest, 'base64')).toString('utf8');
  const match = xml.match(/<(?:\w+:)?AuthnRequest[^>]*\sID="([^"]+)"/);
  if (!match) throw new Error('not an AuthnRequest');
  return match[1];
}

const escape = (s) => String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const page = (title, body, onload = '') => `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>${escape(title)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:28rem;margin:4rem auto;padding:0 1rem}
.banner{background:#e8f0fe;border:1px solid #7aa7e8;padding:.75rem;border-radius:.5rem}
label,input,button{display:block;width:100%;margin:.5rem 0;font-size:1rem}input{padding:.5rem}
button{padding:.6rem;cursor:pointer}</style></head><body${onload}>${body}</body></html>`;

async function readBody(req) {
  let body = '';
  for await (const chunk of req) body += chunk;
  return body;
}

const server = http.createServer(async (req, res) => {
  const url = new URL(req.url, base);
  try {
    if (url.pathname === '/favicon.ico') { res.writeHead(204); return res.end(); }
    if (url.pathname === '/metadata') {
      res.writeHead(200, { 'content-type': 'application/samlmetadata+xml' });
      return res.end(idp.getMetadata());
    }
    if (url.pathname === '/sso' && req.method === 'GET') {
      const rid = requestId(url.searchParams.get('SAMLRequest') || '');
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      return res.end(page('Company sign-in (SAML test IdP)', `<p class="banner" role="note">Test SAML identity provider</p>
<h1>Company sign-in</h1><form method="post" action="/sso/login">
<input type="hidden" name="rid" value="${escape(rid)}">
<label for="email">Work e-mail</label><input id="email" name="email" type="email" required>
<button type="submit">Sign in with SSO</button></form>`));
    }
    if (url.pathname === '/sso/login' && req.method === 'POST') {
      const form = new URLSearchParams(await readBody(req));
      const response = makeResponse({ email: form.get('email').trim().toLowerCase(), inResponseTo: form.get('rid') });
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      return res.end(page('Signing in…', `<form method="post" action="${escape(acsUrl)}">
<input type="hidden" name="SAMLResponse" value="${response}"><noscript><button type="submit">Continue</button></noscript></form>`,
        ' onload="document.forms[0].submit()"'));
    }
    if (url.pathname === '/forge' && req.method === 'POST') {
      const spec = JSON.parse(await readBody(req));
      const body = JSON.stringify({ SAMLResponse: makeResponse(spec) });
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(body);
    }
    res.writeHead(404);
    res.end('not found');
  } catch (err) {
    console.error(err);
    if (res.headersSent) return res.end();
    res.writeHead(400, { 'content-type': 'text/plain; charset=utf-8' });
    res.end(`refused: ${err.message}`);
  }
});
server.listen(port, () => console.log(`SAML IdP at ${base} (metadata ${entityID})`));
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => server.close(() => process.exit(0)));
