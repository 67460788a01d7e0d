/**
 * Numbered schema migrations: the one history of both databases. Append only: a released migration is
 * never edited; a change is a new entry with the next number. Applied in order inside one transaction
 * each, recorded in `schema_migrations` (docs/design/STORE.md). Each entry's `sql` is SQLite's; Postgres
 * runs its `postgres` text (postgres-migrations.ts) when the two must differ, else the same `sql`.
 */
import { POSTGRES_SQL } from './postgres-migrations.js';

export interface Migration {
  version: number;
  name: string;
  /** SQLite's text, and Postgres's too when `postgres` is absent (then it must be portable: BIGINT, no json_*()). */
  sql: string;
  /** Postgres's text of the same step, when SQLite's cannot run there. */
  postgres?: string;
}

const ENTRIES: readonly Migration[] = [
  {
    version: 1,
    name: 'initial',
    sql: `
      CREATE TABLE sandboxes (
        id TEXT PRIMARY KEY,
        state TEXT NOT NULL,
        runtime TEXT NOT NULL,
        template_id TEXT NOT NULL,
        source_snapshot_id TEXT,
        parent_id TEXT,
        cpu_count INTEGER NOT NULL,
        memory_mb INTEGER NOT NULL,
        metadata TEXT NOT NULL,
        envs TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        timeout_ms INTEGER NOT NULL,
        on_timeout TEXT NOT NULL,
        end_at INTEGER,
        slot INTEGER,
        paused_snapshot_id TEXT,
        error TEXT,
        operation TEXT,
        updated_at INTEGER NOT NULL
      );
      CREATE INDEX sandboxes_state ON sandboxes(state, id);
      CREATE INDEX sandboxes_end_at ON sandboxes(end_at) WHERE end_at IS NOT NULL;
      CREATE INDEX sandboxes_parent ON sandboxes(parent_id) WHERE parent_id IS NOT NULL;
      CREATE INDEX sandboxes_paused_snapshot ON sandboxes(paused_snapshot_id) WHERE paused_snapshot_id IS NOT NULL;
      CREATE INDEX sandboxes_source_snapshot ON sandboxes(source_snapshot_id) WHERE source_snapshot_id IS NOT NULL;

      CREATE TABLE sandbox_metadata (
        sandbox_id TEXT NOT NULL REFERENCES sandboxes(id) ON DELETE CASCADE,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        PRIMARY KEY (sandbox_id, key)
      );
      CREATE INDEX sandbox_metadata_kv ON sandbox_metadata(key, value);

      CREATE TABLE snapshots (
        id TEXT PRIMARY KEY,
        name TEXT UNIQUE,
        kind TEXT NOT NULL,
        status TEXT NOT NULL,
        runtime TEXT NOT NULL,
        template_id TEXT NOT NULL,
        sandbox_id TEXT,
        parent_snapshot_id TEXT,
        size_bytes INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        cpu_count INTEGER NOT NULL,
        memory_mb INTEGER NOT NULL
      );
      CREATE INDEX snapshots_sandbox ON snapshots(sandbox_id);

      CREATE TABLE templates (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        runtime TEXT NOT NULL,
        spec_hash TEXT NOT NULL,
        snapshot_id TEXT NOT NULL,
        parent TEXT,
        size_bytes INTEGER NOT NULL,
        rootfs_dir TEXT NOT NULL,
        created_at INTEGER NOT NULL
      );

      CREATE TABLE api_keys (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        hash TEXT NOT NULL UNIQUE,
        prefix TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        last_used_at INTEGER,
        revoked_at INTEGER
      );

      CREATE TABLE audit_log (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        at INTEGER NOT NULL,
        api_key_id TEXT,
        method TEXT NOT NULL,
        path TEXT NOT NULL,
        action TEXT NOT NULL,
        sandbox_id TEXT,
        status INTEGER NOT NULL,
        error_code TEXT
      );
      CREATE INDEX audit_log_sandbox ON audit_log(sandbox_id, id);

      CREATE TABLE slots (
        slot INTEGER PRIMARY KEY,
        sandbox_id TEXT NOT NULL UNIQUE
      );
    `,
  },
  {
    // A checkpoint image is only valid on the root filesystem it was made on, and rebuilding a template
    // points it at a new one: sandboxes and snapshots pin theirs. Existing rows get their template's
    // current rootfs (the best available; '' when the template is gone, which restore refuses). SQLite
    // cannot add a NOT NULL column without a default, so the default '' is barred for new rows by triggers.
    version: 2,
    name: 'pin-rootfs-dir',
    sql: `
      ALTER TABLE sandboxes ADD COLUMN rootfs_dir TEXT NOT NULL DEFAULT '';
      ALTER TABLE snapshots ADD COLUMN rootfs_dir TEXT NOT NULL DEFAULT '';
      UPDATE sandboxes SET rootfs_dir = COALESCE((SELECT t.rootfs_dir FROM templates t WHERE t.id = sandboxes.template_id), '');
      UPDATE snapshots SET rootfs_dir = COALESCE((SELECT t.rootfs_dir FROM templates t WHERE t.id = snapshots.template_id), '');
      CREATE TRIGGER sandboxes_rootfs_dir_required BEFORE INSERT ON sandboxes WHEN NEW.rootfs_dir = ''
        BEGIN SELECT RAISE(ABORT, 'sandboxes.rootfs_dir is required'); END;
      CREATE TRIGGER snapshots_rootfs_dir_required BEFORE INSERT ON snapshots WHEN NEW.rootfs_dir = ''
        BEGIN SELECT RAISE(ABORT, 'snapshots.rootfs_dir is required'); END;
    `,
  },
  {
    // Egress allowlists: one policy per sandbox, its normalised rules in order as a JSON array of strings.
    // No row = never set (open egress). Rows go with their sandbox.
    version: 3,
    name: 'egress-policies',
    sql: `
      CREATE TABLE egress_policies (
        sandbox_id TEXT PRIMARY KEY REFERENCES sandboxes(id) ON DELETE CASCADE,
        rules TEXT NOT NULL CHECK (json_valid(rules) AND json_type(rules) = 'array'),
        updated_at INTEGER NOT NULL
      );
    `,
  },
  {
    // Egress log: the verdicts host enforcement recorded per sandbox (connections and DNS names). `seq` is
    // the append order (newest = highest); the store keeps each sandbox's newest N rows, trimming now and
    // then. Rows go with their sandbox, and when it is killed.
    version: 4,
    name: 'egress-log',
    sql: `
      CREATE TABLE egress_log (
        seq INTEGER PRIMARY KEY,
        sandbox_id TEXT NOT NULL REFERENCES sandboxes(id) ON DELETE CASCADE,
        at INTEGER NOT NULL,
        protocol TEXT NOT NULL CHECK (protocol IN ('tcp', 'udp', 'icmp', 'dns')),
        destination TEXT NOT NULL,
        port INTEGER,
        name TEXT,
        verdict TEXT NOT NULL CHECK (verdict IN ('allowed', 'denied')),
        rule TEXT
      );
      CREATE INDEX egress_log_sandbox ON egress_log(sandbox_id, seq);
    `,
  },
  {
    version: 5,
    name: 'template-images',
    sql: `
      ALTER TABLE templates ADD COLUMN images TEXT NOT NULL DEFAULT '[]';
      UPDATE templates SET images = json_array(json_object('runtime', runtime, 'snapshotId', snapshot_id));
    `,
  },
  {
    version: 6,
    name: 'disk-size',
    // Root disk size (MiB) of microVM sandboxes and their snapshots. NULL: no disk of its own (gVisor),
    // or a sandbox made before sizes were recorded (its disk is whatever its image had).
    sql: `
      ALTER TABLE sandboxes ADD COLUMN disk_size_mb INTEGER CHECK (disk_size_mb IS NULL OR disk_size_mb > 0);
      ALTER TABLE snapshots ADD COLUMN disk_size_mb INTEGER CHECK (disk_size_mb IS NULL OR disk_size_mb > 0);
    `,
  },
  {
    version: 7,
    name: 'template-envs',
    // A template's default environment for its sandboxes (its spec's envs merged over its parent's), a JSON
    // object of strings. Templates built before it was recorded have none ('{}') until they are rebuilt.
    sql: `
      ALTER TABLE templates ADD COLUMN envs TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(envs) AND json_type(envs) = 'object');
    `,
  },
  {
    version: 8,
    name: 'snapshot-envs',
    // The envs of a snapshot's sandbox when it was taken (a JSON object of strings): a sandbox created from
    // the snapshot starts with them. NULL: a template image (its template's envs apply) or a snapshot taken
    // before they were recorded (unknown: its template's envs apply, as before).
    sql: `
      ALTER TABLE snapshots ADD COLUMN envs TEXT CHECK (envs IS NULL OR (json_valid(envs) AND json_type(envs) = 'object'));
    `,
  },
  {
    version: 9,
    name: 'egress-modes',
    // An explicit mode per egress policy: 'open' (no rules), 'allowlist' (at least one rule) or 'deny-all'
    // (no rules: nothing leaves), so that "no rules" no longer has to mean open. Existing rows keep their
    // meaning ('[]' = open, any rule = allowlist). The table is rebuilt because SQLite checks a new
    // column's CHECK (here: mode fits the rules) against existing rows with the default value.
    sql: `
      CREATE TABLE egress_policies_v9 (
        sandbox_id TEXT PRIMARY KEY REFERENCES sandboxes(id) ON DELETE CASCADE,
        mode TEXT NOT NULL CHECK (mode IN ('open', 'allowlist', 'deny-all')),
        rules TEXT NOT NULL CHECK (json_valid(rules) AND json_type(rules) = 'array'),
        updated_at INTEGER NOT NULL,
        CHECK ((mode = 'allowlist') = (json_array_length(rules) > 0))
      );
      INSERT INTO egress_policies_v9 (sandbox_id, mode, rules, updated_at)
        SELECT sandbox_id, CASE WHEN json_array_length(rules) = 0 THEN 'open' ELSE 'allowlist' END, rules, updated_at FROM egress_policies;
      DROP TABLE egress_policies;
      ALTER TABLE egress_policies_v9 RENAME TO egress_policies;
    `,
  },
  {
    version: 10,
    name: 'snapshot-egress',
    // The egress policy of a snapshot's sandbox when it was taken (JSON { mode, rules }): a sandbox created
    // from the snapshot starts with it. Snapshots taken before it was recorded get the policy their
    // sandbox has now (its row is kept after a kill; no policy row = it never set one = open): the closest
    // to the truth there is, and never more open than that sandbox. NULL: a template image (open), or a
    // snapshot whose sandbox row is gone (nothing to go on: open, as before; the API shows null).
    sql: `
      ALTER TABLE snapshots ADD COLUMN egress TEXT CHECK (egress IS NULL OR COALESCE(
        json_valid(egress) AND json_type(egress, '$.rules') = 'array' AND json_extract(egress, '$.mode') IN ('open', 'allowlist', 'deny-all')
        AND (json_extract(egress, '$.mode') = 'allowlist') = (json_array_length(egress, '$.rules') > 0), 0));
      UPDATE snapshots SET egress = COALESCE(
          (SELECT json_object('mode', p.mode, 'rules', json(p.rules)) FROM egress_policies p WHERE p.sandbox_id = snapshots.sandbox_id),
          json_object('mode', 'open', 'rules', json_array()))
        WHERE kind != 'template' AND sandbox_id IN (SELECT id FROM sandboxes);
    `,
  },
  {
    version: 11,
    name: 'ingress',
    // A sandbox's exposed ports (JSON [{ port, access }], port order) and autoResume (NULL: the default, on
    // while a port is exposed), the same recorded with each snapshot (NULL: none recorded: no ports), and
    // one access token per sandbox (its token ports' credential; a fork gets its own). Existing sandboxes
    // expose nothing and get a token when one is first needed.
    sql: `
      ALTER TABLE sandboxes ADD COLUMN ingress TEXT NOT NULL DEFAULT '{"ports":[],"autoResume":null}'
        CHECK (json_valid(ingress) AND json_type(ingress, '$.ports') = 'array');
      ALTER TABLE snapshots ADD COLUMN ingress TEXT CHECK (ingress IS NULL OR (json_valid(ingress) AND json_type(ingress, '$.ports') = 'array'));
      CREATE TABLE access_tokens (
        sandbox_id TEXT PRIMARY KEY REFERENCES sandboxes(id) ON DELETE CASCADE,
        token TEXT NOT NULL UNIQUE,
        created_at INTEGER NOT NULL
      );
    `,
  },
  {
    version: 12,
    name: 'auto-pause-and-ingress-log',
    // Idle auto-pause per sandbox (JSON { idleMs }; NULL: off, as every existing sandbox). The ingress log:
    // the requests the ingress served per sandbox, newest N kept as the egress log's, rows going with their
    // sandbox and when it is killed; and per sandbox how often a request woke it, and when last.
    sql: `
      ALTER TABLE sandboxes ADD COLUMN auto_pause TEXT CHECK (auto_pause IS NULL OR (json_valid(auto_pause) AND json_type(auto_pause, '$.idleMs') = 'integer'));
      ALTER TABLE sandboxes ADD COLUMN ingress_wakeups INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE sandboxes ADD COLUMN last_wake_at INTEGER;
      CREATE TABLE ingress_log (
        seq INTEGER PRIMARY KEY,
        sandbox_id TEXT NOT NULL REFERENCES sandboxes(id) ON DELETE CASCADE,
        at INTEGER NOT NULL,
        client TEXT NOT NULL,
        method TEXT NOT NULL,
        path TEXT NOT NULL,
        port INTEGER NOT NULL,
        status INTEGER NOT NULL,
        bytes INTEGER NOT NULL,
        duration_ms REAL NOT NULL,
        woke INTEGER NOT NULL CHECK (woke IN (0, 1))
      );
      CREATE INDEX ingress_log_sandbox ON ingress_log(sandbox_id, seq);
    `,
  },
  {
    version: 13,
    name: 'snapshot-auto-pause',
    // The idle auto-pause of a snapshot's sandbox when it was taken (JSON { idleMs }; NULL: off, or not
    // recorded, as every existing snapshot): a sandbox created from it starts with it.
    sql: `
      ALTER TABLE snapshots ADD COLUMN auto_pause TEXT CHECK (auto_pause IS NULL OR (json_valid(auto_pause) AND json_type(auto_pause, '$.idleMs') = 'integer'));
    `,
  },
  {
    version: 14,
    name: 'sandbox-last-active',
    // When a sandbox was last used (ms), so that idle auto-pause's clock survives a daemon restart: written
    // with each transition to running and every few seconds by core's activity persister. NULL: not known
    // (every existing sandbox: its idle time counts from the first look after the upgrade, as before).
    sql: `
      ALTER TABLE sandboxes ADD COLUMN last_active_at INTEGER;
    `,
  },
  {
    // Named for merges: renumber freely if another branch took 15 (nothing depends on the number).
    version: 15,
    name: 'ssh-keys-and-tokens',
    // The SSH gateway's credentials. Registered public keys, each with the API key that registered it (its
    // owner; no foreign key: a revoked API key's rows stay), unique by fingerprint. Short-lived access
    // tokens: only a sha256 of each, the one sandbox it opens (gone with the sandbox row; a kill deletes
    // them too) and its expiry.
    sql: `
      CREATE TABLE ssh_keys (
        id TEXT PRIMARY KEY,
        owner_api_key_id TEXT,
        name TEXT NOT NULL,
        type TEXT NOT NULL,
        fingerprint TEXT NOT NULL UNIQUE,
        public_key TEXT NOT NULL,
        created_at INTEGER NOT NULL
      );
      CREATE TABLE ssh_tokens (
        hash TEXT PRIMARY KEY,
        sandbox_id TEXT NOT NULL REFERENCES sandboxes(id) ON DELETE CASCADE,
        owner_api_key_id TEXT,
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL
      );
      CREATE INDEX ssh_tokens_expiry ON ssh_tokens(expires_at);
      CREATE INDEX ssh_tokens_sandbox ON ssh_tokens(sandbox_id);
    `,
  },
  {
    // Named for merges: renumber freely if another branch took 16 (nothing depends on the number).
    version: 16,
    name: 'audit-mcp-tool',
    // The MCP tool an audited API call was made for (header x-ramify-mcp-tool); null for every older entry.
    sql: `
      ALTER TABLE audit_log ADD COLUMN tool TEXT;
    `,
  },
  {
    // Named for merges: renumber freely if another branch took 17 (nothing depends on the number).
    version: 17,
    name: 'teams',
    // Teams (docs/design/TEAMS.md): every sandbox, snapshot, template, SSH key and API key belongs to one.
    // Everything that exists goes to the 'default' team, whose templates are shared with every team, and
    // every existing API key becomes an admin key of it: a single user notices nothing. Names of snapshots
    // and templates and SSH fingerprints become unique per team (the tables are rebuilt: SQLite cannot
    // drop a UNIQUE column constraint); new API keys name their role and may expire. The audit log records
    // the caller's team. A quota field NULL is no limit.
    sql: `
      CREATE TABLE teams (
        id TEXT PRIMARY KEY CHECK (length(id) BETWEEN 1 AND 63 AND id GLOB '[a-z0-9]*' AND id NOT GLOB '*[^a-z0-9-]*'),
        created_at INTEGER NOT NULL,
        max_running INTEGER CHECK (max_running IS NULL OR max_running >= 0),
        max_memory_mb INTEGER CHECK (max_memory_mb IS NULL OR max_memory_mb >= 0),
        max_forks_per_call INTEGER CHECK (max_forks_per_call IS NULL OR max_forks_per_call >= 0)
      );
      INSERT INTO teams (id, created_at) VALUES ('default', CAST(strftime('%s', 'now') AS INTEGER) * 1000);

      ALTER TABLE sandboxes ADD COLUMN team_id TEXT NOT NULL DEFAULT 'default';
      CREATE INDEX sandboxes_team ON sandboxes(team_id, state);

      ALTER TABLE audit_log ADD COLUMN team_id TEXT;
      UPDATE audit_log SET team_id = 'default' WHERE api_key_id IS NOT NULL
        OR sandbox_id IN (SELECT id FROM sandboxes);
      CREATE INDEX audit_log_team ON audit_log(team_id, id);

      CREATE TABLE api_keys_v17 (
        id TEXT PRIMARY KEY,
        team_id TEXT NOT NULL REFERENCES teams(id),
        role TEXT NOT NULL CHECK (role IN ('admin', 'member')),
        name TEXT NOT NULL,
        hash TEXT NOT NULL UNIQUE,
        prefix TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        last_used_at INTEGER,
        expires_at INTEGER,
        revoked_at INTEGER
      );
      INSERT INTO api_keys_v17 (id, team_id, role, name, hash, prefix, created_at, last_used_at, expires_at, revoked_at)
        SELECT id, 'default', 'admin', name, hash, prefix, created_at, last_used_at, NULL, revoked_at FROM api_keys;
      DROP TABLE api_keys;
      ALTER TABLE api_keys_v17 RENAME TO api_keys;
      CREATE INDEX api_keys_team ON api_keys(team_id, created_at);

      CREATE TABLE snapshots_v17 (
        id TEXT PRIMARY KEY,
        team_id TEXT NOT NULL,
        name TEXT,
        kind TEXT NOT NULL,
        status TEXT NOT NULL,
        runtime TEXT NOT NULL,
        template_id TEXT NOT NULL,
        sandbox_id TEXT,
        parent_snapshot_id TEXT,
        size_bytes INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        cpu_count INTEGER NOT NULL,
        memory_mb INTEGER NOT NULL,
        rootfs_dir TEXT NOT NULL DEFAULT '',
        disk_size_mb INTEGER CHECK (disk_size_mb IS NULL OR disk_size_mb > 0),
        envs TEXT CHECK (envs IS NULL OR (json_valid(envs) AND json_type(envs) = 'object')),
        egress TEXT CHECK (egress IS NULL OR COALESCE(
          json_valid(egress) AND json_type(egress, '$.rules') = 'array' AND json_extract(egress, '$.mode') IN ('open', 'allowlist', 'deny-all')
          AND (json_extract(egress, '$.mode') = 'allowlist') = (json_array_length(egress, '$.rules') > 0), 0)),
        ingress TEXT CHECK (ingress IS NULL OR (json_valid(ingress) AND json_type(ingress, '$.ports') = 'array')),
        auto_pause TEXT CHECK (auto_pause IS NULL OR (json_valid(auto_pause) AND json_type(auto_pause, '$.idleMs') = 'integer')),
        UNIQUE (team_id, name)
      );
      INSERT INTO snapshots_v17 (id, team_id, name, kind, status, runtime, template_id, sandbox_id, parent_snapshot_id, size_bytes, created_at, cpu_count, memory_mb,
          rootfs_dir, disk_size_mb, envs, egress, ingress, auto_pause)
        SELECT id, 'default', name, kind, status, runtime, template_id, sandbox_id, parent_snapshot_id, size_bytes, created_at, cpu_count, memory_mb,
          rootfs_dir, disk_size_mb, envs, egress, ingress, auto_pause FROM snapshots;
      DROP TABLE snapshots;
      ALTER TABLE snapshots_v17 RENAME TO snapshots;
      CREATE INDEX snapshots_sandbox ON snapshots(sandbox_id);
      CREATE TRIGGER snapshots_rootfs_dir_required BEFORE INSERT ON snapshots WHEN NEW.rootfs_dir = ''
        BEGIN SELECT RAISE(ABORT, 'snapshots.rootfs_dir is required'); END;

      CREATE TABLE templates_v17 (
        id TEXT PRIMARY KEY,
        team_id TEXT NOT NULL,
        name TEXT NOT NULL,
        runtime TEXT NOT NULL,
        spec_hash TEXT NOT NULL,
        snapshot_id TEXT NOT NULL,
        parent TEXT,
        size_bytes INTEGER NOT NULL,
        rootfs_dir TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        images TEXT NOT NULL DEFAULT '[]',
        envs TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(envs) AND json_type(envs) = 'object'),
        UNIQUE (team_id, name)
      );
      INSERT INTO templates_v17 (id, team_id, name, runtime, spec_hash, snapshot_id, parent, size_bytes, rootfs_dir, created_at, images, envs)
        SELECT id, 'default', name, runtime, spec_hash, snapshot_id, parent, size_bytes, rootfs_dir, created_at, images, envs FROM templates;
      DROP TABLE templates;
      ALTER TABLE templates_v17 RENAME TO templates;

      CREATE TABLE ssh_keys_v17 (
        id TEXT PRIMARY KEY,
        team_id TEXT NOT NULL,
        owner_api_key_id TEXT,
        name TEXT NOT NULL,
        type TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        public_key TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        UNIQUE (team_id, fingerprint)
      );
      INSERT INTO ssh_keys_v17 (id, team_id, owner_api_key_id, name, type, fingerprint, public_key, created_at)
        SELECT id, 'default', owner_api_key_id, name, type, fingerprint, public_key, created_at FROM ssh_keys;
      DROP TABLE ssh_keys;
      ALTER TABLE ssh_keys_v17 RENAME TO ssh_keys;
    `,
  },
  {
    version: 18,
    name: 'private-networks',
    // Private networks (docs/design/NETWORKS.md): named networks of a team, unique by name in it; which sandbox is on which
    // network under which alias (unique per network; the rows go with their sandbox row, and a kill deletes
    // them in the write that records it); the networks a snapshot's sandbox was on (JSON [{ network, alias }];
    // NULL: not recorded, as every existing snapshot); and, per egress log entry, the other sandbox of a
    // connection between two sandboxes and the network that allowed it.
    sql: `
      CREATE TABLE networks (
        id TEXT PRIMARY KEY,
        team_id TEXT NOT NULL REFERENCES teams(id),
        name TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        UNIQUE (team_id, name)
      );
      CREATE TABLE network_members (
        network_id TEXT NOT NULL REFERENCES networks(id),
        sandbox_id TEXT NOT NULL REFERENCES sandboxes(id) ON DELETE CASCADE,
        alias TEXT NOT NULL,
        attached_at INTEGER NOT NULL,
        PRIMARY KEY (network_id, sandbox_id),
        UNIQUE (network_id, alias)
      );
      CREATE INDEX network_members_sandbox ON network_members(sandbox_id);
      ALTER TABLE snapshots ADD COLUMN networks TEXT CHECK (networks IS NULL OR (json_valid(networks) AND json_type(networks) = 'array'));
      ALTER TABLE egress_log ADD COLUMN peer_sandbox_id TEXT;
      ALTER TABLE egress_log ADD COLUMN peer_network TEXT;
    `,
  },
  {
    version: 19,
    name: 'metering',
    // Metering and budgets (docs/design/USAGE.md): where each sandbox's metering stands (time written up to
    // time_at; the last counter reading: when, of which runtime instance, its raw CPU and link byte counters,
    // so the next reading, by any daemon, counts only what came after), metered amounts per sandbox and UTC
    // hour (time in ms, CPU in µs, memory and disk as MiB·ms and byte·ms, bytes in and out, peak memory),
    // and budgets set on sandboxes (limits, the tree's CPU and running time when set, the limit found exceeded).
    sql: `
      CREATE TABLE sandbox_meters (
        sandbox_id TEXT PRIMARY KEY REFERENCES sandboxes(id) ON DELETE CASCADE,
        time_at INTEGER NOT NULL,
        sampled_at INTEGER,
        instance TEXT,
        cpu_us INTEGER,
        net_in_bytes INTEGER,
        net_out_bytes INTEGER
      );
      CREATE TABLE usage_hours (
        sandbox_id TEXT NOT NULL REFERENCES sandboxes(id) ON DELETE CASCADE,
        hour INTEGER NOT NULL,
        running_ms INTEGER NOT NULL DEFAULT 0,
        paused_ms INTEGER NOT NULL DEFAULT 0,
        cpu_us INTEGER NOT NULL DEFAULT 0,
        memory_mib_ms REAL NOT NULL DEFAULT 0,
        disk_byte_ms REAL NOT NULL DEFAULT 0,
        net_in_bytes INTEGER NOT NULL DEFAULT 0,
        net_out_bytes INTEGER NOT NULL DEFAULT 0,
        memory_peak_bytes INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (sandbox_id, hour)
      );
      CREATE INDEX usage_hours_hour ON usage_hours(hour);
      CREATE TABLE sandbox_budgets (
        sandbox_id TEXT PRIMARY KEY REFERENCES sandboxes(id) ON DELETE CASCADE,
        team_id TEXT NOT NULL,
        cpu_seconds REAL CHECK (cpu_seconds IS NULL OR cpu_seconds > 0),
        sandbox_seconds REAL CHECK (sandbox_seconds IS NULL OR sandbox_seconds > 0),
        max_sandboxes INTEGER CHECK (max_sandboxes IS NULL OR max_sandboxes >= 1),
        since INTEGER NOT NULL,
        base_cpu_us INTEGER NOT NULL,
        base_running_ms INTEGER NOT NULL,
        exceeded TEXT CHECK (exceeded IS NULL OR exceeded IN ('cpuSeconds', 'sandboxSeconds')),
        updated_at INTEGER NOT NULL
      );
    `,
  },
  {
    version: 20,
    name: 'events-and-webhooks',
    // Events and webhooks (docs/design/EVENTS.md): lifecycle events in the order recorded (seq: the id
    // evt_<seq> and the listing cursor), each of a team and mostly of a sandbox, pruned by age; a team's
    // webhooks with their signing secrets; one row per event delivered to a webhook, its attempts as a
    // JSON array (they go with their webhook, and with their event when it is pruned); and the commands
    // seen to end in each sandbox (kept after a kill, pruned by age, the newest 1000 per sandbox).
    sql: `
      CREATE TABLE events (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        type TEXT NOT NULL,
        at INTEGER NOT NULL,
        team_id TEXT NOT NULL,
        sandbox_id TEXT,
        key_id TEXT,
        cause TEXT NOT NULL,
        data TEXT NOT NULL CHECK (json_valid(data) AND json_type(data) = 'object')
      );
      CREATE INDEX events_team ON events(team_id, seq);
      CREATE INDEX events_sandbox ON events(sandbox_id, seq) WHERE sandbox_id IS NOT NULL;
      CREATE INDEX events_at ON events(at);
      CREATE TABLE webhooks (
        id TEXT PRIMARY KEY,
        team_id TEXT NOT NULL REFERENCES teams(id),
        name TEXT NOT NULL,
        url TEXT NOT NULL,
        events TEXT NOT NULL CHECK (json_valid(events) AND json_type(events) = 'array'),
        secret TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        created_by TEXT
      );
      CREATE INDEX webhooks_team ON webhooks(team_id, created_at);
      CREATE TABLE webhook_deliveries (
        id TEXT PRIMARY KEY,
        webhook_id TEXT NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
        event_seq INTEGER NOT NULL,
        event_type TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
        attempts TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(attempts) AND json_type(attempts) = 'array'),
        next_attempt_at INTEGER,
        created_at INTEGER NOT NULL
      );
      CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries(webhook_id, id);
      CREATE INDEX webhook_deliveries_pending ON webhook_deliveries(next_attempt_at) WHERE status = 'pending';
      CREATE INDEX webhook_deliveries_event ON webhook_deliveries(event_seq);
      CREATE TABLE command_log (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        sandbox_id TEXT NOT NULL REFERENCES sandboxes(id) ON DELETE CASCADE,
        at INTEGER NOT NULL,
        pid INTEGER NOT NULL,
        cmd TEXT NOT NULL,
        exit_code INTEGER,
        signal TEXT,
        error TEXT,
        duration_ms REAL NOT NULL,
        key_id TEXT
      );
      CREATE INDEX command_log_sandbox ON command_log(sandbox_id, seq);
      CREATE INDEX command_log_at ON command_log(at);
    `,
  },
  {
    // Named for merges: renumber freely if another branch took 26 (nothing depends on the number).
    version: 26,
    name: 'host-ids',
    // Which host holds each sandbox (its runtime instance, or its local image while paused) and each
    // snapshot's image; network slots become unique per host (each host has its own address plan). Rows
    // from before name no host (NULL, '' for slots): the daemon adopts them at start with its own id
    // (Store.adoptUnhostedRows), so a single machine sees nothing change.
    sql: `
      ALTER TABLE sandboxes ADD COLUMN host_id TEXT;
      CREATE INDEX sandboxes_host ON sandboxes(host_id, state);
      ALTER TABLE snapshots ADD COLUMN host_id TEXT;
      CREATE TABLE slots_v26 (
        host_id TEXT NOT NULL DEFAULT '',
        slot INTEGER NOT NULL,
        sandbox_id TEXT NOT NULL UNIQUE,
        PRIMARY KEY (host_id, slot)
      );
      INSERT INTO slots_v26 (host_id, slot, sandbox_id) SELECT '', slot, sandbox_id FROM slots;
      DROP TABLE slots;
      ALTER TABLE slots_v26 RENAME TO slots;
    `,
  },
  {
    version: 27,
    name: 'egress-log-dns-errors',
    // Why an allowed DNS lookup got no address (NXDOMAIN, SERVFAIL): the policy resolver reports failed
    // lookups to the egress log beside the names it refused (docs/design/EGRESS.md). NULL on every other row.
    sql: `
      ALTER TABLE egress_log ADD COLUMN error TEXT CHECK (error IS NULL OR error IN ('NXDOMAIN', 'SERVFAIL'));
    `,
  },
  {
    version: 28,
    name: 'event-team-seq',
    // Event ids and cursors per team (docs/design/EVENTS.md): each event gets its team's next number
    // (team_seq), from a counter per team that never goes back (event_sequences: a team whose events were
    // all pruned goes on from its last number), so a team's cursor shows the team's own events only, not
    // the gaps other teams' events left in the global seq. Existing events are numbered per team in their
    // order; each delivery keeps its event's team number for its event id. Portable SQL (both databases).
    sql: `
      ALTER TABLE events ADD COLUMN team_seq BIGINT NOT NULL DEFAULT 0;
      UPDATE events SET team_seq = numbered.n
        FROM (SELECT seq AS s, ROW_NUMBER() OVER (PARTITION BY team_id ORDER BY seq) AS n FROM events) AS numbered
        WHERE numbered.s = events.seq;
      DROP INDEX events_team;
      CREATE UNIQUE INDEX events_team ON events(team_id, team_seq);
      DROP INDEX events_sandbox;
      CREATE INDEX events_sandbox ON events(sandbox_id, team_seq) WHERE sandbox_id IS NOT NULL;
      CREATE TABLE event_sequences (
        team_id TEXT NOT NULL PRIMARY KEY,
        last_seq BIGINT NOT NULL
      );
      INSERT INTO event_sequences (team_id, last_seq) SELECT team_id, MAX(team_seq) FROM events GROUP BY team_id;
      ALTER TABLE webhook_deliveries ADD COLUMN event_team_seq BIGINT NOT NULL DEFAULT 0;
      UPDATE webhook_deliveries SET event_team_seq = events.team_seq FROM events WHERE events.seq = webhook_deliveries.event_seq;
    `,
  },
  {
    // Named for merges: renumber freely if another branch took 29 (nothing depends on the number).
    version: 29,
    name: 'hosts',
    // The host registry of the API/host split (docs/design/SCALE-OUT.md): host daemons, their leases on the
    // database's clock, capacity and last reported load; and placement reservations, capacity held on a host
    // for a sandbox between the API's choice and the host's create. Portable SQL: Postgres runs the same text.
    sql: `
      CREATE TABLE hosts (
        id TEXT PRIMARY KEY,
        url TEXT NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('active', 'draining', 'gone')),
        lease_expires_at BIGINT NOT NULL,
        last_heartbeat_at BIGINT NOT NULL,
        started_at BIGINT NOT NULL,
        memory_mb BIGINT NOT NULL,
        cpus BIGINT NOT NULL,
        slots BIGINT NOT NULL,
        running_sandboxes BIGINT NOT NULL DEFAULT 0,
        memory_reserved_mb BIGINT NOT NULL DEFAULT 0,
        cached_images TEXT NOT NULL DEFAULT '[]',
        pending_uploads TEXT NOT NULL DEFAULT '[]'
      );
      CREATE TABLE host_reservations (
        id TEXT PRIMARY KEY,
        host_id TEXT NOT NULL REFERENCES hosts(id) ON DELETE CASCADE,
        memory_mb BIGINT NOT NULL,
        cpus BIGINT NOT NULL,
        expires_at BIGINT NOT NULL
      );
      CREATE INDEX host_reservations_host ON host_reservations(host_id, expires_at);
    `,
  },
  {
    version: 30,
    name: 'host-edges',
    // Where the API role reaches a host's ingress listener and SSH gateway (`host:port`), so that port URLs
    // and SSH connections made to an API process reach the sandbox's host (docs/design/SCALE-OUT.md).
    // NULL: the host runs no such listener. Portable SQL.
    sql: `
      ALTER TABLE hosts ADD COLUMN ingress_address TEXT;
      ALTER TABLE hosts ADD COLUMN ssh_address TEXT;
    `,
  },
  {
    version: 33,
    name: 'fork-reservations',
    // A reservation holds capacity for several sandboxes at once: a fork's N children on their parent's
    // host (docs/design/SCALE-OUT.md). memory_mb and cpus hold the total; sandboxes the slots. And the
    // secrets every process of one store shares (the API role signs the calls it forwards and audits with
    // one, so hosts do not audit them again). Portable SQL.
    sql: `
      ALTER TABLE host_reservations ADD COLUMN sandboxes BIGINT NOT NULL DEFAULT 1;
      CREATE TABLE cluster_secrets (
        name TEXT PRIMARY KEY,
        value TEXT NOT NULL
      );
    `,
  },
  {
    // Named for merges: renumber freely if another branch took 34 (nothing depends on the number).
    version: 34,
    name: 'cross-process-deliveries-and-quotas',
    // Several processes over one database (docs/design/SCALE-OUT.md): a webhook delivery is made once per
    // (webhook, event) whichever process matched it (duplicates a cluster may have made are dropped first),
    // and is claimed for a while by the process attempting it (claimed_by, claim_expires_at on the
    // database's clock), so a dead process's pending deliveries are taken over when its claim runs out.
    // quota_reservations: room a team's admitted calls still in flight hold (a create before its row, a
    // fork's children, a resume), counted by every process's quota check until released or expired;
    // fork_tree_reservations: a fork's children held against the maxSandboxes of each budget covering
    // the parent, likewise. Portable SQL.
    sql: `
      DELETE FROM webhook_deliveries WHERE id NOT IN (SELECT MIN(id) FROM webhook_deliveries GROUP BY webhook_id, event_seq);
      CREATE UNIQUE INDEX webhook_deliveries_once ON webhook_deliveries(webhook_id, event_seq);
      ALTER TABLE webhook_deliveries ADD COLUMN claimed_by TEXT;
      ALTER TABLE webhook_deliveries ADD COLUMN claim_expires_at BIGINT;
      CREATE TABLE quota_reservations (
        team_id TEXT NOT NULL,
        sandbox_id TEXT NOT NULL,
        memory_mb BIGINT NOT NULL,
        holder TEXT NOT NULL,
        expires_at BIGINT NOT NULL,
        PRIMARY KEY (team_id, sandbox_id)
      );
      CREATE TABLE fork_tree_reservations (
        budget_sandbox_id TEXT NOT NULL,
        sandbox_id TEXT NOT NULL,
        holder TEXT NOT NULL,
        expires_at BIGINT NOT NULL,
        PRIMARY KEY (budget_sandbox_id, sandbox_id)
      );
      CREATE INDEX fork_tree_reservations_sandbox ON fork_tree_reservations(sandbox_id);
    `,
  },
  {
    // Named for merges: renumber freely if another branch took 35 (nothing depends on the number).
    version: 35,
    name: 'audit-team-seq',
    // Audit ids per team (docs/design/TEAMS.md, "Audit ids"), as event ids (migration 28): each entry gets
    // its team's next number (team_seq) from a counter per team that never goes back (audit_sequences), so
    // the ids a team reads count its own audited calls only, not the gaps other teams' calls left in the
    // global id. Entries of calls that carried no valid key (team_id NULL) are a stream of their own, whose
    // counter is keyed '' (no team id is empty). Existing entries are numbered per team in their order; id
    // stays the internal global order. Portable SQL: Postgres runs the same text (as 28), so
    // postgres-migrations.ts has no entry 35.
    sql: `
      ALTER TABLE audit_log ADD COLUMN team_seq BIGINT NOT NULL DEFAULT 0;
      UPDATE audit_log SET team_seq = numbered.n
        FROM (SELECT id AS i, ROW_NUMBER() OVER (PARTITION BY team_id ORDER BY id) AS n FROM audit_log) AS numbered
        WHERE numbered.i = audit_log.id;
      DROP INDEX audit_log_team;
      CREATE UNIQUE INDEX audit_log_team ON audit_log(team_id, team_seq);
      CREATE INDEX audit_log_anonymous ON audit_log(team_seq) WHERE team_id IS NULL;
      CREATE TABLE audit_sequences (
        team_id TEXT NOT NULL PRIMARY KEY,
        last_seq BIGINT NOT NULL
      );
      INSERT INTO audit_sequences (team_id, last_seq) SELECT COALESCE(team_id, ''), MAX(team_seq) FROM audit_log GROUP BY team_id;
    `,
  },
];

/** Every migration, each with its Postgres text attached where it has one. */
export const MIGRATIONS: readonly Migration[] = ENTRIES.map((m) => (POSTGRES_SQL[m.version] !== undefined && m.postgres === undefined ? { ...m, postgres: POSTGRES_SQL[m.version] } : m));
