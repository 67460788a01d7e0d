/**
 * The `.internal` zone of the policy DNS resolver: `<alias>.<network>.internal` is answered with the
 * member's slot address, only to a sandbox on that network; every other name under `.internal` (another
 * network's, an unknown alias, `internal` itself, more or fewer labels) is NXDOMAIN. None is ever
 * forwarded upstream, whatever the asker's egress policy (open, allowlist or deny-all).
 */
import { INTERNAL_ZONE } from '@ramify/contracts';
import type { LocalZone, LocalZoneAnswer } from '../egress/dns/dns-resolver-types.js';
import type { NetworkDirectoryReader } from './network-directory.js';

/**
 * TTL of `.internal` answers, seconds: short, since a detach or a kill takes the name away (the address a
 * name stands for never changes while its sandbox lives: paused sandboxes keep their slot).
 */
export const INTERNAL_TTL_SECONDS = 5;

const SUFFIX = `.${INTERNAL_ZONE}`;

/** The resolver's {@link LocalZone} over `directory`. */
export function internalZone(directory: NetworkDirectoryReader): LocalZone {
  return {
    answer(source: string, name: string): LocalZoneAnswer | null {
      if (name !== INTERNAL_ZONE && !name.endsWith(SUFFIX)) return null;
      const labels = name.split('.');
      const address = labels.length === 3 ? directory.resolve(source, labels[0]!, labels[1]!) : null;
      return { addresses: address ? [address] : [], ttlSeconds: INTERNAL_TTL_SECONDS };
    },
  };
}
