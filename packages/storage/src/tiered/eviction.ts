/**
 * The local cache's eviction rule: when the cached images take more than the budget, remove the local
 * copies of durable images that nothing is using, least recently used first, until the cache fits.
 * An image not yet durable is never evicted (it is the only copy), nor one opened in the last
 * `openGraceMs` (a runtime may be about to restore from it). A cache of only such images may stay over
 * budget: the budget bounds what can be given back, never what is kept safe.
 */

export interface CachedImage {
  snapshotId: string;
  /** Bytes it takes on disk. */
  bytes: number;
  /** Last use (commit, download or open), epoch ms; null when not durable yet. */
  lastUsedMs: number | null;
  /** Being uploaded, downloaded or removed, or opened within the grace period. */
  inUse: boolean;
}

export interface EvictionPlan {
  /** Ids to evict, in order. */
  evict: string[];
  /** Bytes cached before, and after the evictions. */
  cachedBytes: number;
  afterBytes: number;
}

/** Plan the evictions that bring `images` within `budgetBytes`. Pure. */
export function planEviction(images: readonly CachedImage[], budgetBytes: number): EvictionPlan {
  const cachedBytes = images.reduce((sum, image) => sum + image.bytes, 0);
  let afterBytes = cachedBytes;
  const evict: string[] = [];
  const candidates = images
    .filter((image): image is CachedImage & { lastUsedMs: number } => image.lastUsedMs !== null && !image.inUse)
    .sort((a, b) => a.lastUsedMs - b.lastUsedMs || (a.snapshotId < b.snapshotId ? -1 : 1));
  for (const image of candidates) {
    if (afterBytes <= budgetBytes) break;
    evict.push(image.snapshotId);
    afterBytes -= image.bytes;
  }
  return { evict, cachedBytes, afterBytes };
}
