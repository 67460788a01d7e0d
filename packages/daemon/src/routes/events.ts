/**
 * Event routes (docs/design/EVENTS.md): a team's lifecycle events, one page at a time, and a sandbox's
 * timeline (its events, the commands run in it, its egress and ingress decisions). The live stream is a
 * WebSocket (streams/events.ts). A key reads its own team's events; another team's sandbox is 404.
 */
import { ListEventsQuery, ListEventsResponse, TimelineQuery, TimelineResponse } from '@ramify/contracts';
import { getTimeline, listEvents } from '@ramify/core';
import { IdParams, route, type RouteSpec } from '../http/route.js';

export const eventRoutes: RouteSpec[] = [
  route({
    operation: 'listEvents', summary: "The team's lifecycle events, oldest first from a cursor (or newest first), filtered by sandbox and type",
    description: 'after: the nextCursor of the previous page, or an event id (opaque, per team; one that is not of the caller\'s team is 400 INVALID_CURSOR). Oldest first (default), nextCursor is always the last event\'s id, so polling with it returns only newer events; '
      + "newest first, it is null after the last page. type: comma-separated event types (an unknown one is 400). sandboxId: another team's sandbox is 404 SANDBOX_NOT_FOUND. "
      + 'Events are kept for the daemon\'s retention (default 7 days).',
    query: ListEventsQuery, response: ListEventsResponse,
    handler: async ({ core, query, actor }) => listEvents(core, actor.teamId, {
      ...(query.sandboxId !== undefined ? { sandboxId: query.sandboxId } : {}),
      ...(query.type !== undefined ? { types: query.type } : {}),
      ...(query.after !== undefined ? { after: query.after } : {}),
      ...(query.limit !== undefined ? { limit: query.limit } : {}),
      ...(query.order !== undefined ? { order: query.order } : {}),
    }),
  }),
  route({
    operation: 'getTimeline', summary: "A sandbox's timeline: its lifecycle events, commands (exit code, duration), egress and ingress decisions, merged by time",
    description: 'The newest limit entries (default 200, at most 1000) of the four together, newest first (order=desc, default) or oldest first (order=asc). '
      + 'Commands: those started over the API whose exit the daemon saw. A killed sandbox keeps its events and commands; its egress and ingress logs end with it.',
    params: IdParams, query: TimelineQuery, response: TimelineResponse,
    handler: async ({ core, params, query }) => ({ entries: await getTimeline(core, params.id, { ...(query.limit !== undefined ? { limit: query.limit } : {}), ...(query.order !== undefined ? { order: query.order } : {}) }) }),
  }),
];
