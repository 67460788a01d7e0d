/** The ingress room: port URLs proxied into sandboxes (see docs/design/INGRESS.md). */
export { IngressServer, type IngressBackend, type IngressRequestRecord, type IngressTargetInfo, type IngressServerOptions, type UpstreamConnections } from './ingress-server.js';
export { UpstreamPool, type UpstreamPoolOptions, type UpstreamTarget } from './upstream-pool.js';
export { IngressDialer, DialError, DEFAULT_INGRESS_UID, type IngressDialerOptions } from './dialer.js';
export { watchIngressFirewall, installIngressFirewall, removeIngressFirewall, ingressFirewallInstalled, ingressTableName, ingressTableScript, INGRESS_FIREWALL_MARKER, type IngressFirewallSpec } from './firewall.js';
export { parseIngressHost, isIngressHost, type IngressHost, type BadIngressHost } from './host.js';
export { ACCESS_COOKIE, accessCookie, presentedToken, upstreamHeaders, withoutTokenParameter, type PresentedToken, type TokenSource } from './access.js';
export { errorAnswer, sendError, sendUpgradeError, wantsHtml } from './answers.js';
export { IngressThread, type IngressThreadOptions } from './thread/index.js';
