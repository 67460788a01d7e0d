/**
 * How an `nft` process is run. nft 1.0.6 (Debian 12) builds a cache of the host's whole ruleset before
 * every transaction, with four hash tables of 8192 buckets (128 KiB each, zeroed bucket by bucket) for
 * every table on the host, and frees them all before it exits. Traced with `strace -T` on the 2-core host
 * (a started-ahead `nft -f -` adding one set element, eight tables on the host): 19 ms from its input to
 * its exit, of which ~13.5 ms were the page faults of those 33 allocations (one `mmap` each, ~0.4 ms
 * apiece on this VM) and ~6.5 ms their `munmap`s after the commit (which itself took 0.2 ms). With glibc's
 * allocator told to take them from a heap that grows 8 MiB at a time in transparent huge pages and never
 * shrinks (the process is short-lived), the same transaction took 7.0 ms (medians of 15, alternating;
 * 14.2 ms without the huge pages). Nothing else changes: the tunables are the allocator's, not nft's.
 * A glibc or kernel without them (THP off) ignores them. docs/design/EGRESS.md, "What a transaction costs".
 */

/** glibc malloc tunables for nft (see the module comment). */
export const NFT_GLIBC_TUNABLES = [
  'glibc.malloc.mmap_threshold=33554432',
  'glibc.malloc.trim_threshold=1073741824',
  'glibc.malloc.top_pad=8388608',
  'glibc.malloc.hugetlb=1',
].join(':');

/** The environment of an `nft` child: this process's, with {@link NFT_GLIBC_TUNABLES} added to any tunables already set. */
export function nftEnv(base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const own = base['GLIBC_TUNABLES'];
  return { ...base, GLIBC_TUNABLES: own ? `${own}:${NFT_GLIBC_TUNABLES}` : NFT_GLIBC_TUNABLES };
}
