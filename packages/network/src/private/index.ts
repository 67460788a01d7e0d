export { NetworkDirectory, type NetworkDirectoryReader, type SlotMemberships } from './network-directory.js';
export { NftPrivateNetworks, pairElements, peerElements, type NftPrivateNetworksOptions } from './nft-private-networks.js';
export { internalZone, INTERNAL_TTL_SECONDS } from './internal-zone.js';
