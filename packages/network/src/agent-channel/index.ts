export {
  AGENT_FIREWALL_MARKER,
  DEFAULT_AGENT_DIALER_UID,
  agentFirewallInstalled,
  agentTableName,
  agentTableScript,
  installAgentFirewall,
  removeAgentFirewall,
  watchAgentFirewall,
  type AgentFirewallSpec,
} from './firewall.js';
