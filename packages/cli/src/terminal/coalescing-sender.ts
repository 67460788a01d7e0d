/**
 * One request in flight at a time, the rest merged: what arrives while a send is on its way is merged
 * into one pending value and sent right after it. Keystrokes are concatenated (a paste or fast typing
 * becomes one request, in order, instead of one request per chunk); resizes keep only the latest.
 */

/** See the module comment. */
export interface CoalescingSender<T> {
  /** Send `value` now, or merge it into what goes next when a send is in flight. */
  push(value: T): void;
  /** Resolves once nothing is in flight or pending. */
  drained(): Promise<void>;
}

/**
 * @param send  delivers one (merged) value; a rejection goes to `onError` and the next value is sent anyway.
 * @param merge combines the pending value with a newer one.
 * @param onError called with each failed send's error (never throws out of `push`).
 */
export function coalescingSender<T>(send: (value: T) => Promise<void>, merge: (pending: T, next: T) => T, onError: (err: unknown) => void): CoalescingSender<T> {
  let pending: { value: T } | undefined;
  let inFlight: Promise<void> | undefined;
  const pump = async (): Promise<void> => {
    while (pending) {
      const { value } = pending;
      pending = undefined;
      try {
        await send(value);
      } catch (err) {
        onError(err);
      }
    }
    inFlight = undefined;
  };
  return {
    push(value) {
      pending = pending ? { value: merge(pending.value, value) } : { value };
      inFlight ??= pump();
    },
    async drained() {
      while (inFlight) await inFlight;
    },
  };
}

/** Concatenate two byte chunks (keystrokes in order). */
export function concatBytes(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.byteLength + b.byteLength);
  out.set(a, 0);
  out.set(b, a.byteLength);
  return out;
}
