/**
 * Signing webhook deliveries: `X-Ramify-Signature: sha256=<hex>` is the HMAC-SHA256 of the raw request
 * body (the exact bytes) keyed by the webhook's secret (`whsec_...`, used as its UTF-8 bytes). The body
 * carries `delivery.sentAt`, so the signature covers the time too: a receiver rejects a stale one.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** The signature header's value for `body`: `sha256=` + 64 hex digits. */
export function signWebhookBody(secret: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(body, 'utf8').digest('hex')}`;
}

/** Whether `signature` (the header's value) is `body`'s under `secret`; constant time. */
export function verifyWebhookBody(secret: string, body: string | Uint8Array, signature: string): boolean {
  const expected = Buffer.from(`sha256=${createHmac('sha256', secret).update(body).digest('hex')}`);
  const given = Buffer.from(signature);
  return given.length === expected.length && timingSafeEqual(given, expected);
}
