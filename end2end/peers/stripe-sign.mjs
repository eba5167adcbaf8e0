// Signs a Stripe webhook payload with the `stripe` library's own test signer
// (stripe.webhooks.generateTestHeaderString), as Stripe's servers sign deliveries.
// Usage: node stripe-sign.mjs PAYLOAD_FILE SECRET[,SECRET…] [UNIX_TIMESTAMP]
// With several secrets (a secret being rolled) the header carries one v1 per secret, as
// Stripe sends while an endpoint has two.
import { readFileSync } from 'node:fs';
import Stripe from 'stripe';

const [payloadFile, secrets, timestamp] = process.argv.slice(2);
const payload = readFileSync(payloadFile, 'utf8');
const stripe = new Stripe('sk_test_tidemark');
const t = timestamp ? Number(timestamp) : Math.floor(Date.now() / 1000);
const signatures = secrets.split(',').map((secret) => {
  const header = stripe.webhooks.generateTestHeaderString({ payload, secret, timestamp: t });
  // The library's own check, so the header is Stripe's and not ours.
  const age = Math.abs(Math.floor(Date.now() / 1000) - t);
  stripe.webhooks.constructEvent(payload, header, secret, age + 300);
  return header.split(',').filter((part) => part.startsWith('v1='));
});
process.stdout.write([`t=${t}`, ...signatures.flat()].join(','));
