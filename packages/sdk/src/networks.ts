/**
 * Private networks: `Network.create/list/get/delete` (the resource) and `sbx.networks` (one sandbox's
 * memberships: `attach`, `detach`, `list`). Sandboxes on a network reach each other by any protocol and
 * port, at their addresses or as `<alias>.<network>.internal` (resolved for members only); everything
 * else between sandboxes stays refused. A fork joins its parent's networks as `<parent alias>-<n>`
 * unless `fork({ networks: false })`. See docs/design/NETWORKS.md.
 */
import { ROUTES } from '@ramify/contracts/client';
import type { ListNetworksResponse, NetworkInfo, SandboxNetworkInfo, SandboxNetworksResponse } from '@ramify/contracts';
import { resolveConnection, type ConnectionOpts } from './connection.js';
import { ApiClient } from './http.js';

const client = (opts: ConnectionOpts = {}): ApiClient => new ApiClient(resolveConnection(opts));

/** Private networks of the daemon, as statics taking {@link ConnectionOpts} last. */
export class Network {
  private constructor() {}

  /**
   * Create a network. `name` is a DNS label (1-63 of a-z, 0-9 and `-`, not starting or ending with `-`).
   * @throws `VALIDATION_FAILED` (a bad name), `NETWORK_EXISTS` (409).
   */
  static create(name: string, opts: ConnectionOpts = {}): Promise<NetworkInfo> {
    return client(opts).at(ROUTES.createNetwork, {}).json<NetworkInfo>({ json: { name } });
  }

  /** Every network, oldest first, with its members. */
  static async list(opts: ConnectionOpts = {}): Promise<NetworkInfo[]> {
    return (await client(opts).at(ROUTES.listNetworks, {}).json<ListNetworksResponse>()).networks;
  }

  /** One network (by name or id) with its members. @throws `NETWORK_NOT_FOUND`. */
  static get(nameOrId: string, opts: ConnectionOpts = {}): Promise<NetworkInfo> {
    return client(opts).at(ROUTES.getNetwork, { network: nameOrId }).json<NetworkInfo>();
  }

  /**
   * Delete a network (by name or id). @throws `NETWORK_NOT_FOUND`, `NETWORK_IN_USE` (409, while sandboxes
   * are on it: `details.sandboxes` lists them; detach or kill them first).
   */
  static delete(nameOrId: string, opts: ConnectionOpts = {}): Promise<void> {
    return client(opts).at(ROUTES.deleteNetwork, { network: nameOrId }).empty();
  }
}

/** One sandbox's private networks (`sbx.networks`). */
export class SandboxNetworks {
  constructor(private readonly api: ApiClient, private readonly sandboxId: string) {}


  /**
   * Put the sandbox on `network` (name or id), live: when this resolves, it and the network's members reach
   * each other and resolve `<alias>.<network>.internal`. `alias` (a DNS label) defaults to `sbx-` and the
   * last 8 characters of its id. Attaching again with the same alias (or none) is a no-op.
   * @throws `NETWORK_NOT_FOUND`, `NETWORK_ALIAS_TAKEN` (409), `CONFLICT` (on it under another alias),
   *   `INVALID_STATE` (not running or paused), `VALIDATION_FAILED` (a bad alias).
   */
  attach(network: string, opts: { alias?: string } = {}): Promise<SandboxNetworkInfo> {
    return this.api.at(ROUTES.joinNetwork, { id: this.sandboxId }).json<SandboxNetworkInfo>({ json: { network, ...(opts.alias !== undefined ? { alias: opts.alias } : {}) } });
  }

  /** Take the sandbox off `network`, live: its open connections to the members are cut (idempotent). @throws `NETWORK_NOT_FOUND`. */
  detach(network: string): Promise<void> {
    return this.api.at(ROUTES.leaveNetwork, { id: this.sandboxId, network }).empty();
  }

  /** The networks the sandbox is on, each with its alias and `hostname` there. */
  async list(): Promise<SandboxNetworkInfo[]> {
    return (await this.api.at(ROUTES.listSandboxNetworks, { id: this.sandboxId }).json<SandboxNetworksResponse>()).networks;
  }
}
