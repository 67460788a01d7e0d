/**
 * In-memory state of the protocol fixture: sandboxes, their files and processes, snapshots, templates.
 * Just enough behaviour to answer the contract's routes with plausible data; no sandbox runs.
 */
import { startingPorts } from './fixture-ports.js';
import {
  DEFAULT_MAX_OUTPUT_BYTES, RamifyError, type CommandRequest, type CreateSandboxRequest, type EgressMode, type EgressPolicyRequest, type FileInfo, type SandboxInfo,
  type SandboxState, type SnapshotInfo, type TemplateInfo,
} from '@ramify/contracts';
import { FixtureProcess, builtinScript, type CommandScript } from './fixture-processes.js';
import { FixtureBudgets } from './fixture-budgets.js';

/** One fixture sandbox. */
export interface FixtureSandbox {
  info: SandboxInfo;
  files: Map<string, Uint8Array>;
  dirs: Set<string>;
  processes: Map<number, FixtureProcess>;
  nextPid: number;
  /** Egress mode and rules as given (the fixture does not normalise); null = never set. */
  egress: { mode: EgressMode; rules: string[]; updatedAt: string } | null;
}

const now = (): string => new Date().toISOString();
const parentOf = (p: string): string => p.replace(/\/[^/]+\/?$/, '') || '/';
const baseName = (p: string): string => p.split('/').filter(Boolean).pop() ?? '/';

/**
 * The fixture's stand-in for the daemon's policy check: just enough to exercise error paths. A rule with
 * whitespace, or a wildcard over a single label (`*.com`), is refused naming it, and so are rules with
 * mode `open` or `deny-all`; rules are kept as given. A bare list is `open` when empty, else `allowlist`.
 */
export function checkEgress(input: string[] | EgressPolicyRequest): { mode: EgressMode; rules: string[] } {
  const { mode: asked, rules = [] } = Array.isArray(input) ? { rules: input } : input;
  rules.forEach((rule, index) => {
    if (/\s/.test(rule) || rule === '' || /^\*\.[^.]+$/.test(rule)) {
      throw new RamifyError('VALIDATION_FAILED', `egress rule ${index + 1} '${rule}': not allowed by the fixture`, { rule, index });
    }
  });
  const mode = asked ?? (rules.length > 0 ? 'allowlist' : 'open');
  if (mode !== 'allowlist' && rules.length > 0) throw new RamifyError('VALIDATION_FAILED', `egress mode '${mode}' takes no rules`, { field: 'rules' });
  return { mode, rules: [...rules] };
}

/** A new sandbox's egress: the request's (checked), else a copy of its parent's or its snapshot's, else none set. */
function startingEgress(req: CreateSandboxRequest, inherited: { mode: EgressMode; rules: string[] } | null): FixtureSandbox['egress'] {
  const policy = req.egress ? checkEgress(req.egress) : inherited;
  return policy ? { mode: policy.mode, rules: [...policy.rules], updatedAt: now() } : null;
}

export class FixtureState {
  readonly sandboxes = new Map<string, FixtureSandbox>();
  /** Budgets per fork tree (a test runs one out with `budgets.exceed`). */
  readonly budgets = new FixtureBudgets(this.sandboxes);
  readonly snapshots = new Map<string, SnapshotInfo>();
  readonly templates = new Map<string, TemplateInfo>([['base', {
    id: 'tpl_base', name: 'base', runtime: 'gvisor', specHash: 'h0', snapshotId: 'snap_base', images: [{ runtime: 'gvisor', snapshotId: 'snap_base' }], parent: null, envs: {}, sizeBytes: 1 << 20, createdAt: now(), team: 'default',
  }]]);
  private counter = 0;

  /**
   * @param scripts custom scripts by command line.
   * @param maxOutputBytes the per-stream limit of command results, bytes (as the daemon's option).
   */
  constructor(private readonly scripts: (cmd: string) => CommandScript | undefined, readonly maxOutputBytes = DEFAULT_MAX_OUTPUT_BYTES) {}

  private id(prefix: string): string {
    this.counter += 1;
    return `${prefix}_${String(this.counter).padStart(4, '0')}`;
  }

  get(id: string): FixtureSandbox {
    const s = this.sandboxes.get(id);
    if (!s) throw new RamifyError('SANDBOX_NOT_FOUND', `sandbox '${id}' not found`, { id });
    return s;
  }

  /** The sandbox, required to be in one of `states`. */
  inState(id: string, states: SandboxState[]): FixtureSandbox {
    const s = this.get(id);
    if (!states.includes(s.info.state)) throw new RamifyError('INVALID_STATE', `sandbox '${id}' is ${s.info.state}`);
    return s;
  }

  create(req: CreateSandboxRequest, parent?: FixtureSandbox): FixtureSandbox {
    const template = req.template ?? 'base';
    if (!parent && !req.snapshot && !this.templates.has(template)) throw new RamifyError('TEMPLATE_NOT_FOUND', `template '${template}' not found`);
    const source = req.snapshot === undefined || parent ? undefined : this.findSnapshot(req.snapshot);
    const timeoutMs = req.timeoutMs ?? parent?.info.timeoutMs ?? 300_000;
    const info: SandboxInfo = {
      id: this.id('sbx'), state: 'running', runtime: 'gvisor', templateId: parent?.info.templateId ?? `tpl_${template}`,
      sourceSnapshotId: parent ? this.id('snap') : source?.id ?? null, parentId: parent?.info.id ?? null,
      cpuCount: req.cpuCount ?? 1, memoryMB: req.memoryMB ?? 512, diskSizeMB: req.diskSizeMB ?? null, metadata: { ...(parent?.info.metadata ?? {}), ...(req.metadata ?? {}) },
      createdAt: now(), endAt: new Date(Date.now() + timeoutMs).toISOString(), timeoutMs, onTimeout: req.onTimeout ?? 'kill', error: null, team: 'default',
      ...(parent
        ? { ports: parent.info.ports.map((p) => ({ ...p })), autoResume: parent.info.autoResume, autoPause: parent.info.autoPause, ingress: parent.info.ingress }
        : startingPorts({ ...req, autoPause: req.autoPause === undefined ? source?.autoPause : req.autoPause })),
    };
    const sbx: FixtureSandbox = {
      info, files: new Map(parent?.files ?? []), dirs: new Set(parent?.dirs ?? ['/', '/root', '/tmp']), processes: new Map(), nextPid: 100,
      egress: startingEgress(req, parent?.egress ?? source?.egress ?? null),
    };
    this.sandboxes.set(info.id, sbx);
    return sbx;
  }

  /** A snapshot by id or name (as the daemon resolves `snapshot` in a create request). */
  findSnapshot(idOrName: string): SnapshotInfo {
    const snap = this.snapshots.get(idOrName) ?? [...this.snapshots.values()].find((s) => s.name === idOrName);
    if (!snap) throw new RamifyError('SNAPSHOT_NOT_FOUND', `snapshot '${idOrName}' not found`, { id: idOrName });
    return snap;
  }

  snapshot(sbx: FixtureSandbox, name: string): SnapshotInfo {
    const snap: SnapshotInfo = {
      id: this.id('snap'), name, kind: 'named', runtime: 'gvisor', templateId: sbx.info.templateId, sandboxId: sbx.info.id,
      parentSnapshotId: sbx.info.sourceSnapshotId, sizeBytes: 4096, createdAt: now(), team: 'default',
      egress: { mode: sbx.egress?.mode ?? 'open', rules: [...(sbx.egress?.rules ?? [])] },
      ingress: null,
      autoPause: sbx.info.autoPause ? { ...sbx.info.autoPause } : null,
      networks: null,
    };
    this.snapshots.set(snap.id, snap);
    return snap;
  }

  startProcess(sbx: FixtureSandbox, request: CommandRequest): FixtureProcess {
    if (sbx.info.state !== 'running') throw new RamifyError('INVALID_STATE', `sandbox '${sbx.info.id}' is ${sbx.info.state}`);
    if (request.cwd && !sbx.dirs.has(request.cwd)) throw new RamifyError('CWD_NOT_FOUND', `cwd '${request.cwd}' does not exist`);
    const proc = new FixtureProcess(sbx.nextPid++, sbx.info.id, request);
    sbx.processes.set(proc.pid, proc);
    proc.start(this.scripts(request.cmd) ?? builtinScript(request.cmd));
    return proc;
  }

  process(sbx: FixtureSandbox, pid: number): FixtureProcess {
    const p = sbx.processes.get(pid);
    if (!p) throw new RamifyError('PROCESS_NOT_FOUND', `process ${pid} not found`);
    return p;
  }

  stat(sbx: FixtureSandbox, path: string): FileInfo {
    const file = sbx.files.get(path);
    if (file) return { name: baseName(path), path, type: 'file', size: file.byteLength, mode: 0o644, mtimeMs: 0 };
    if (sbx.dirs.has(path)) return { name: baseName(path), path, type: 'dir', size: 4096, mode: 0o755, mtimeMs: 0 };
    throw new RamifyError('FILE_NOT_FOUND', `'${path}' not found`);
  }

  writeFile(sbx: FixtureSandbox, path: string, bytes: Uint8Array): FileInfo {
    for (let d = parentOf(path); !sbx.dirs.has(d); d = parentOf(d)) sbx.dirs.add(d);
    sbx.files.set(path, bytes);
    return this.stat(sbx, path);
  }

  list(sbx: FixtureSandbox, path: string, depth: number): FileInfo[] {
    if (this.stat(sbx, path).type !== 'dir') throw new RamifyError('NOT_A_DIRECTORY', `'${path}' is not a directory`);
    const prefix = path.endsWith('/') ? path : `${path}/`;
    const all = [...sbx.dirs, ...sbx.files.keys()].filter((p) => p.startsWith(prefix) && p !== path);
    return all.filter((p) => p.slice(prefix.length).split('/').length <= depth).sort().map((p) => this.stat(sbx, p));
  }

  remove(sbx: FixtureSandbox, path: string): void {
    this.stat(sbx, path);
    const prefix = `${path}/`;
    for (const p of [...sbx.files.keys()]) if (p === path || p.startsWith(prefix)) sbx.files.delete(p);
    for (const p of [...sbx.dirs]) if (p === path || p.startsWith(prefix)) sbx.dirs.delete(p);
  }

  mkdir(sbx: FixtureSandbox, path: string): FileInfo {
    if (sbx.files.has(path) || sbx.dirs.has(path)) throw new RamifyError('FILE_EXISTS', `'${path}' exists`);
    for (let d = path; !sbx.dirs.has(d); d = parentOf(d)) sbx.dirs.add(d);
    return this.stat(sbx, path);
  }

  rename(sbx: FixtureSandbox, from: string, to: string): FileInfo {
    const file = sbx.files.get(from);
    if (!file) throw new RamifyError('FILE_NOT_FOUND', `'${from}' not found`);
    sbx.files.delete(from);
    return this.writeFile(sbx, to, file);
  }
}
