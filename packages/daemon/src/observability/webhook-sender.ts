/**
 * Core's WebhookSender over Node's `fetch` (undici): one POST, no redirects followed, bounded by
 * `timeoutMs` until the response's status line; the response body is never read (cancelled), so a
 * receiver that trickles its answer holds nothing.
 */
import type { WebhookSender } from '@ramify/core';

export const fetchWebhookSender: WebhookSender = {
  post: async ({ url, headers, body, timeoutMs, signal }) => {
    let res: Response;
    try {
      res = await fetch(url, { method: 'POST', headers, body, redirect: 'manual', signal: AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]) });
    } catch (err) {
      const e = err as { name?: string; cause?: { code?: string; message?: string }; message?: string };
      if (e.name === 'TimeoutError' || e.name === 'AbortError') throw new Error(`no answer within ${timeoutMs} ms`);
      throw new Error(e.cause?.code ?? e.cause?.message ?? e.message ?? String(err));
    }
    await res.body?.cancel().catch(() => undefined);
    return { statusCode: res.status };
  },
};
