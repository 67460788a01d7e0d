/** The `/processes` routes of one sandbox, shared by {@link Commands} and {@link CommandHandle}. */
import type { ProcessInfo } from '@ramify/contracts';
import type { ApiClient } from '../http.js';
import type { StreamExit } from './stream-socket.js';

/** Signals the API can deliver to a process group. */
export type ProcessSignal = 'SIGTERM' | 'SIGKILL' | 'SIGINT' | 'SIGHUP' | 'SIGQUIT' | 'SIGUSR1' | 'SIGUSR2' | 'SIGSTOP' | 'SIGCONT';

/** Encode stdin data: strings as UTF-8. */
export function toBytes(data: string | Uint8Array): Uint8Array {
  return typeof data === 'string' ? new TextEncoder().encode(data) : data;
}

export class ProcessRoutes {
  constructor(readonly api: ApiClient, readonly sandboxId: string) {}

  private path(pid: number, rest = ''): string {
    return `/sandboxes/${encodeURIComponent(this.sandboxId)}/processes/${pid}${rest}`;
  }

  /** WebSocket path of a process's output stream. */
  streamPath(pid: number): string {
    return this.path(pid, '/stream');
  }

  async list(): Promise<ProcessInfo[]> {
    const res = await this.api.json<{ processes: ProcessInfo[] }>('GET', `/sandboxes/${encodeURIComponent(this.sandboxId)}/processes`);
    return res.processes;
  }

  sendStdin(pid: number, data: string | Uint8Array): Promise<void> {
    return this.api.empty('POST', this.path(pid, '/stdin'), { body: toBytes(data) });
  }

  closeStdin(pid: number): Promise<void> {
    return this.api.empty('POST', this.path(pid, '/stdin/close'));
  }

  /** Resize a terminal (`PTY_SIZE_INVALID`, `NOT_A_PTY`, `PROCESS_NOT_FOUND`, `PROCESS_EXITED`). */
  resize(pid: number, size: { cols: number; rows: number }): Promise<void> {
    return this.api.empty('POST', this.path(pid, '/resize'), { json: { cols: size.cols, rows: size.rows } });
  }

  signal(pid: number, signal: ProcessSignal): Promise<void> {
    return this.api.empty('POST', this.path(pid, '/signal'), { json: { signal } });
  }

  /** The sandbox's current state and, in `error`, why (e.g. to tell a paused sandbox from a dead one). */
  async sandboxState(): Promise<{ state: string; error: string | null }> {
    const info = await this.api.json<{ state: string; error?: string | null }>('GET', `/sandboxes/${encodeURIComponent(this.sandboxId)}`);
    return { state: info.state, error: info.error ?? null };
  }

  /** Long poll until the process exits (no request deadline). */
  wait(pid: number): Promise<StreamExit> {
    return this.api.json<StreamExit>('GET', this.path(pid, '/wait'), { timeoutMs: 0 });
  }
}
