/** Conversion between thrown errors and the `WireError` shape carried in responses and stream ends. */
import { ERROR_CODES, RamifyError, type ErrorCode } from '@ramify/contracts';
import type { WireError } from './messages.js';

/** Serialize any thrown value; non-Ramify errors become `INTERNAL` with their message. */
export function toWireError(err: unknown): WireError {
  if (err instanceof RamifyError) return { code: err.code, message: err.message, details: err.details };
  const message = err instanceof Error ? err.message : String(err);
  return { code: 'INTERNAL', message };
}

/** Rebuild a `RamifyError` from the wire; unknown codes become `INTERNAL` (the original kept in details). */
export function fromWireError(wire: WireError): RamifyError {
  const known = typeof wire.code === 'string' && wire.code in ERROR_CODES;
  const code = (known ? wire.code : 'INTERNAL') as ErrorCode;
  const details = known ? wire.details : { ...wire.details, agentCode: wire.code };
  return new RamifyError(code, String(wire.message ?? 'agent error'), details);
}
