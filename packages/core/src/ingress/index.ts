/** The ingress domain: exposed ports, access tokens, wake on request (see docs/design/INGRESS.md). */
export { NO_INGRESS, checkPort, copyIngress, effectiveAutoResume, parsePortSpecs, portHost, portUrl, sortPorts } from './ports.js';
export { ACCESS_TOKEN_BYTES, isWellFormedToken, matchesVerifier, newAccessToken, sandboxAccessToken, tokenVerifier, tokensEqual } from './access-token.js';
export { exposePort, setAutoResume, unexposePort } from './expose.js';
export { getPortUrl, ingressEndpoint, listPorts, toPortsInfo } from './get-ports.js';
export { exposedAccess, sandboxNotFound, type IngressRoute } from './ingress-route.js';
export { ingressTarget, wakeForIngress, wakeForSsh, type IngressTarget } from './ingress-target.js';
export { BufferedIngressLog, getIngressLog, toIngressLogEntry, INGRESS_LOG_DEFAULT_LIMIT, INGRESS_LOG_MAX_LIMIT, INGRESS_LOG_MAX_PATH, type BufferedIngressLogOptions } from './ingress-log.js';
export { diagnoseListeners, isLoopbackHex, listeningAddresses, sandboxListeners, type ListenerDiagnosis } from './listeners.js';
