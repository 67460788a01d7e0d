/** Inbound: expose a port of a sandbox at its URL, and get that URL (with the access token for token ports). */
import { z } from 'zod';
import { ACCESS_TOKEN_HEADER, ACCESS_TOKEN_QUERY, PortAccess, PortNumber } from '@ramify/contracts';
import type { PortUrlInfo } from '@ramify/sdk';
import { sandboxId } from './args.js';
import { defineTool, READ_ONLY, type Tool } from './tool.js';

const port = PortNumber.describe('TCP port a server inside the sandbox listens on (bind 0.0.0.0, not 127.0.0.1)');

function urlText(port: number, u: PortUrlInfo): string {
  if (!u.token) return `port ${port}: ${u.url} (public)`;
  return `port ${port}: ${u.url}\nsend header ${ACCESS_TOKEN_HEADER}: ${u.token}, or open ${u.url}?${ACCESS_TOKEN_QUERY}=${u.token} once in a browser (the token is a secret)`;
}

const portExpose = defineTool({
  name: 'port_expose',
  title: 'Expose a port',
  description: "Open a sandbox's port at its URL (token access by default, or public) and return the URL; kept across pause, resume and fork.",
  input: z.strictObject({ sandboxId, port, access: PortAccess.default('token').describe('token (needs the access token, the default) or public (anyone with the URL)') }),
  hints: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  async run(args, ctx) {
    const sbx = ctx.sandbox(args.sandboxId);
    const exposed = await sbx.expose(args.port, { access: args.access });
    const url = await sbx.getPortUrl(args.port);
    return { text: urlText(args.port, url), data: { sandboxId: args.sandboxId, port: args.port, access: exposed.access, url: url.url, host: url.host, ...(url.token ? { token: url.token } : {}) } };
  },
});

const portUrl = defineTool({
  name: 'port_url',
  title: "Get a port's URL",
  description: "The URL of a sandbox's exposed port (and the access token for a token port); PORT_NOT_EXPOSED until port_expose opened it.",
  input: z.strictObject({ sandboxId, port }),
  hints: READ_ONLY,
  async run(args, ctx) {
    const url = await ctx.sandbox(args.sandboxId).getPortUrl(args.port);
    return { text: urlText(args.port, url), data: { sandboxId: args.sandboxId, port: args.port, url: url.url, host: url.host, ...(url.token ? { token: url.token } : {}) } };
  },
});

/** The port tools. */
export const portTools: Tool[] = [portExpose, portUrl];
