export { checkLabel, defaultAlias, forkAliases } from './names.js';
export { createNetwork, deleteNetwork, findNetwork, getNetwork, listNetworks, toNetworkInfo, toNetworkMemberInfo, type NetworkWithMembers } from './networks.js';
export { attachNetwork, detachNetwork, listSandboxNetworks, toSandboxNetworkInfo } from './attach.js';
export { planNetworkJoins, forkNetworkJoins, joinNetworks, type NetworkJoin } from './joins.js';
export { enforceStoredNetworks, releaseNetworkEnforcement, recordedNetworks, assertNetworksEnforceable } from './enforcement.js';
