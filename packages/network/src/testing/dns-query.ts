/**
 * Sending DNS queries from inside a network namespace (a real client process under `nsenter`), so
 * the server sees the namespace's source address.
 */
import { fileURLToPath } from 'node:url';
import { RamifyError } from '@ramify/contracts';
import { run } from '../exec.js';

/** One question; `type` as `dns-packet` names it (`A`, `AAAA`, `TXT`, `UNKNOWN_65`, ...). */
export interface DnsQuestionSpec {
  name: string;
  type?: string;
}

export interface DnsQueryOptions {
  server: string;
  /** Default 53. */
  port?: number;
  /** Default `udp`. */
  transport?: 'udp' | 'tcp';
  /** Per query; default 3000 ms. A query without answer gets rcode `TIMEOUT`. */
  timeoutMs?: number;
  /** Send an EDNS(0) OPT record (1232 bytes); default false (plain 512-byte DNS). */
  edns?: boolean;
}

/** What the client script receives (internal; the options with defaults applied). */
export interface DnsQueryRequest {
  server: string;
  port: number;
  transport: 'udp' | 'tcp';
  timeoutMs: number;
  edns: boolean;
  queries: Array<{ name: string; type: string }>;
}

/** One record of a reply; `data` as text (hex for binary data). */
export interface DnsRecordResult {
  name: string;
  type: string;
  ttl: number;
  data: string;
}

export interface DnsQueryResult {
  name: string;
  type: string;
  /** `NOERROR`, `NXDOMAIN`, `SERVFAIL`, `REFUSED`, `FORMERR`, ... or `TIMEOUT` (no reply). */
  rcode: string;
  truncated: boolean;
  answers: DnsRecordResult[];
  /** Send to receive, measured in the client process. */
  latencyMs: number;
  /** `Date.now()` in the client process when the reply arrived (or the timeout passed). */
  receivedAt: number;
}

const SCRIPT = fileURLToPath(new URL('./dns-query-script.js', import.meta.url));

/**
 * Send `questions` one after another from inside the namespace at `netnsPath`. Resolves with one
 * result per question; rejects `RUNTIME_ERROR` when the client process fails.
 */
export async function queryDnsFrom(netnsPath: string, questions: DnsQuestionSpec[], options: DnsQueryOptions): Promise<DnsQueryResult[]> {
  const request: DnsQueryRequest = {
    server: options.server,
    port: options.port ?? 53,
    transport: options.transport ?? 'udp',
    timeoutMs: options.timeoutMs ?? 3000,
    edns: options.edns ?? false,
    queries: questions.map((q) => ({ name: q.name, type: q.type ?? 'A' })),
  };
  const r = await run(['nsenter', `--net=${netnsPath}`, process.execPath, SCRIPT], JSON.stringify(request));
  if (r.code !== 0) throw new RamifyError('RUNTIME_ERROR', `dns client failed (exit ${r.code}): ${r.stderr.trim()}`);
  return JSON.parse(r.stdout) as DnsQueryResult[];
}
