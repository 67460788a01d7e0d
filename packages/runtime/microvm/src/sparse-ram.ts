/**
 * Making an image's RAM file sparse again: every all-zero 4 KiB page that is allocated on disk becomes
 * a hole (it reads the same). A booted guest whose balloon gives up most of its RAM leaves many such
 * pages behind (measured: a 4 GiB guest ballooned down to 1 GiB wrote ~0.9 GiB of zero pages), and
 * `fallocate --dig-holes` only punches much larger zero runs. Done once per image, by a few lines of
 * Perl (Node has neither SEEK_DATA nor fallocate): it reads only the allocated extents.
 */
import { runChecked } from './host-tools.js';

/** Perl: walk the data extents of ARGV[0] (SEEK_DATA/SEEK_HOLE), punch runs of zero pages, print the bytes punched. */
const DIG_ZERO_PAGES = `
use strict; use warnings; use Fcntl;
my ($path) = @ARGV; my $page = 4096; my $chunk = 1 << 20; my $zero = "\\0" x $page; my $zchunk = "\\0" x $chunk;
sysopen(my $fh, $path, O_RDWR) or die "cannot open $path: $!\\n";
my $size = -s $fh; my $fd = fileno($fh); my ($pos, $punched) = (0, 0);
my $punch = sub { my ($off, $len) = @_; return unless $len;
  syscall(285, $fd, 3, $off, $len) == 0 or die "fallocate punch $off+$len: $!\\n"; $punched += $len; };
while ($pos < $size) {
  my $data = sysseek($fh, $pos, 3); last unless defined $data;
  my $hole = sysseek($fh, $data, 4); die "SEEK_HOLE: $!\\n" unless defined $hole;
  my ($run, $runlen) = (0, 0);
  for (my $off = $data; $off < $hole; $off += $chunk) {
    my $len = $hole - $off < $chunk ? $hole - $off : $chunk;
    sysseek($fh, $off, 0); my $got = sysread($fh, my $buf, $len); die "read: $!\\n" unless defined $got && $got == $len;
    if ($len == $chunk && $buf eq $zchunk) { $run = $off unless $runlen; $runlen += $len; next; }
    for (my $i = 0; $i + $page <= $len; $i += $page) {
      if (substr($buf, $i, $page) eq $zero) { $run = $off + $i unless $runlen; $runlen += $page; }
      else { $punch->($run, $runlen); $runlen = 0; }
    }
  }
  $punch->($run, $runlen);
  $pos = $hole;
}
print "$punched\\n";
`;

/**
 * Punch holes for the all-zero pages of `path` (not in use by any process). Idempotent.
 * @returns bytes turned into holes. Rejects `RUNTIME_ERROR` with Perl's message on failure.
 */
export async function digZeroPages(perlPath: string, path: string): Promise<number> {
  const out = await runChecked([perlPath, '-e', DIG_ZERO_PAGES, path]);
  return Number(out.trim().split('\n').pop() ?? 0);
}
