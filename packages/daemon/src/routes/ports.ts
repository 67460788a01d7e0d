/**
 * Port routes: a sandbox's exposed ports (expose, unexpose, list), one port's URL (with the token for a
 * token port), autoResume and idle auto-pause, and the ingress log. The URLs themselves are served by the
 * ingress listener, not here.
 */
import { ExposePortRequest, IngressLogQuery, IngressLogResponse, PortInfo, PortsInfo, PortUrlInfo, SandboxInfo, SetAutoPauseRequest, SetAutoResumeRequest } from '@ramify/contracts';
import { exposePort, getIngressLog, getPortUrl, listPorts, setAutoPause, setAutoResume, toPortsInfo, toSandboxInfo, unexposePort } from '@ramify/core';
import { z } from 'zod';
import { IdParams, route, type RouteSpec } from '../http/route.js';

/** `/v1/sandboxes/:id/ports/:port` params: the port an integer from 1 to 65535 (a string or 0 is a 400). */
const PortParams = z.strictObject({ id: z.string().min(1).max(128), port: z.coerce.number().int().min(1).max(65535) });

export const portRoutes: RouteSpec[] = [
  route({
    operation: 'getPorts', summary: "A sandbox's exposed ports with their URLs, and whether a request wakes it when paused", params: IdParams, response: PortsInfo,
    handler: async ({ core, params }) => listPorts(core, params.id),
  }),
  route({
    operation: 'exposePort',
    summary: "Expose a port at its URL (access 'token', the default, or 'public'), or change its access; stored before it answers",
    params: PortParams, body: ExposePortRequest.optional(), response: PortInfo,
    handler: async ({ core, params, body }) => {
      const record = await exposePort(core, params.id, params.port, { access: body?.access });
      return toPortsInfo(core, record).ports.find((p) => p.port === params.port);
    },
  }),
  route({
    operation: 'unexposePort', summary: 'Close a port to the ingress (idempotent)', params: PortParams, status: 204,
    handler: async ({ core, params }) => {
      await unexposePort(core, params.id, params.port);
    },
  }),
  route({
    operation: 'getPortUrl', summary: "An exposed port's URL and host, and the sandbox's access token for a token port; 404 PORT_NOT_EXPOSED otherwise",
    params: PortParams, response: PortUrlInfo,
    handler: async ({ core, params }) => getPortUrl(core, params.id, params.port),
  }),
  route({
    operation: 'setAutoResume', summary: 'Whether a request to an exposed port wakes the sandbox when it is paused',
    params: IdParams, body: SetAutoResumeRequest, response: PortsInfo,
    handler: async ({ core, params, body }) => toPortsInfo(core, await setAutoResume(core, params.id, body.autoResume)),
  }),
  route({
    operation: 'setAutoPause',
    summary: 'Pause the sandbox once idle for idleMs (no API call, stream, ingress request or connection, CPU under the threshold), or never ({ autoPause: null }); live',
    description: 'A blocked checkpoint (open outbound connections) is retried later; an idle sandbox is never killed. A request to an exposed port wakes it again while autoResume is on.',
    params: IdParams, body: SetAutoPauseRequest, response: SandboxInfo,
    handler: async ({ core, params, body }) => toSandboxInfo(await setAutoPause(core, params.id, body.autoPause), core.options.ingress),
  }),
  route({
    operation: 'getIngressLog', summary: 'Requests the ingress served for the sandbox, newest first (the newest 1000 are kept), and how often one woke it',
    params: IdParams, query: IngressLogQuery, response: IngressLogResponse,
    handler: async ({ core, params, query }) => getIngressLog(core, params.id, { limit: query.limit }),
  }),
];
