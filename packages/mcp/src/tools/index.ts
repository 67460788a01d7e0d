/**
 * Every tool the Ramify MCP server offers, by group. A new group is one file
 * under tools/ exporting a `Tool[]`, added to {@link RAMIFY_TOOLS} here; register.ts needs no change.
 */
import { commandTools } from './commands.js';
import { egressTools } from './egress.js';
import { eventTools } from './events.js';
import { fileTools } from './files.js';
import { forkTools } from './fork.js';
import { networkTools } from './networks.js';
import { portTools } from './ports.js';
import { sandboxTools } from './sandboxes.js';
import { snapshotTools } from './snapshots.js';
import type { Tool } from './tool.js';

/** All tools, in the order `tools/list` shows them. Names are unique. */
export const RAMIFY_TOOLS: readonly Tool[] = [
  ...sandboxTools,
  ...commandTools,
  ...fileTools,
  ...forkTools,
  ...snapshotTools,
  ...egressTools,
  ...portTools,
  ...networkTools,
  ...eventTools,
];
