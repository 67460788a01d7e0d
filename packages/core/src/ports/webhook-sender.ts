/**
 * The WebhookSender port: one HTTP POST of a webhook delivery (the daemon wires `fetch`). Core's
 * dispatcher decides what to send, when, how often; the sender only sends, bounded by `timeoutMs` (from
 * the request until the response's status line: the body is never read).
 */
export interface WebhookRequest {
  url: string;
  headers: Record<string, string>;
  /** The exact bytes signed (JSON text). */
  body: string;
  timeoutMs: number;
  /** Aborted when the daemon stops: give up at once. */
  signal: AbortSignal;
}

export interface WebhookSender {
  /**
   * POST `request.body` to `request.url`; resolves with the receiver's status, whatever it is (a redirect
   * is not followed: it counts as an answer).
   * @throws WebhookDestinationRefused (`webhooks/destination.ts`) when the destination policy refuses the
   * address connected to (checked on every address the host resolves to, before connecting: a permanent
   * failure, not retried); Error when no answer came in time (refused, reset, DNS, `timeoutMs` passed).
   */
  post(request: WebhookRequest): Promise<{ statusCode: number }>;
}

/** The sender of a daemon that delivers no webhooks (core's tests): every attempt fails, saying so. */
export const NO_WEBHOOK_SENDER: WebhookSender = {
  post: async () => {
    throw new Error('this daemon has no webhook sender wired');
  },
};
