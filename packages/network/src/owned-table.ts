/**
 * An `inet` nftables table this code owns whole and defines in one script (the ingress's, the agent
 * channel's): installed in one `nft -f -` transaction, known to be there by a marker its rules carry,
 * re-installed by the shared watchdog (`table-watch.ts`) whenever it is gone, removed by name.
 */
import { run, runChecked } from './exec.js';
import { watchTable, type TableWatchOptions } from './table-watch.js';

export interface OwnedTable {
  /** The table's name (family `inet`). */
  name: string;
  /** A string only this table's rules carry (a comment). */
  marker: string;
  /** The whole definition: creates the table if missing, deletes it and defines it again, atomically. */
  script: string;
}

/** Install (or replace) the table. Rejects with nft's error. */
export async function installOwnedTable(table: OwnedTable): Promise<void> {
  await runChecked(['nft', '-f', '-'], table.script);
}

/** True when the table is there with its marked rules (a flushed ruleset loses it). */
export async function ownedTableInstalled(name: string, marker: string): Promise<boolean> {
  const r = await run(['nft', 'list', 'table', 'inet', name]);
  return r.code === 0 && r.stdout.includes(marker);
}

/** Re-install the table whenever it is gone (a `nft flush ruleset`, a hand-deleted table). Returns the function that stops it. */
export function watchOwnedTable(table: OwnedTable, options: TableWatchOptions = {}): () => void {
  return watchTable(async () => {
    if (await ownedTableInstalled(table.name, table.marker)) return false;
    await installOwnedTable(table);
    return true;
  }, options);
}

/** Remove the table; no-op when absent. */
export async function removeOwnedTable(name: string): Promise<void> {
  await run(['nft', 'delete', 'table', 'inet', name]);
}
