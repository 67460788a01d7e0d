/**
 * `@ramify/mcp`: Ramify as MCP tools for any agent, on the official `@modelcontextprotocol/sdk`, talking
 * to a daemon only through `@ramify/sdk`. `serveStdio()` is `ramify mcp`; `handleMcpPost()` is the
 * daemon's `/mcp` (Streamable HTTP); `createRamifyMcpServer()` builds the server for any transport.
 */
export { createRamifyMcpServer, INSTRUCTIONS, MCP_SERVER_VERSION, type RamifyMcpOptions } from './server.js';
export { serveStdio, type StdioOptions } from './stdio.js';
export { handleMcpPost, methodNotAllowed } from './http.js';
export { RAMIFY_TOOLS } from './tools/index.js';
export { defineTool, READ_ONLY, type Tool, type ToolContext, type ToolHints, type ToolOutput } from './tools/tool.js';
export { registerTools, tagged } from './tools/register.js';
export { RESOURCE_TAG } from './resources.js';
export { hintFor, CHECKPOINT_RETRY_AFTER_MS, TRANSITION_RETRY_AFTER_MS, type ErrorHint } from './hints.js';
export { cutForModel, type CutText } from './cut.js';
export { toolError, toolResult } from './results.js';
