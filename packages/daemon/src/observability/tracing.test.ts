/**
 * The OTLP exporter's wait for a quiet foreground (tracing.ts, {@link QuietExporter}): a batch is held while
 * the foreground is busy and goes once it is quiet, or once it has waited the cap; a flush (urgent) never
 * waits; batches reach the inner exporter whole and in order. A recording inner exporter, no collector.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import { QuietExporter } from './tracing.js';

const span = {} as ReadableSpan;

function recording(): { inner: SpanExporter; exported: number[] } {
  const exported: number[] = [];
  return {
    exported,
    inner: {
      export: (spans, done) => {
        exported.push(spans.length);
        done({ code: 0 });
      },
      shutdown: async () => undefined,
    },
  };
}

const exportThrough = (exporter: QuietExporter, spans: ReadableSpan[]): Promise<unknown> => new Promise((resolve) => exporter.export(spans, resolve));
const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

test('a batch waits while the foreground is busy and goes once it is quiet; a flush does not wait', async () => {
  const { inner, exported } = recording();
  const exporter = new QuietExporter(inner);
  let quietForMs = 0;
  exporter.quietForMs = () => quietForMs;
  const first = exportThrough(exporter, [span, span]);
  await turn();
  assert.deepEqual(exported, [], 'held while busy');
  quietForMs = 10_000;
  await first;
  assert.deepEqual(exported, [2]);
  quietForMs = 0;
  await exporter.urgently(() => exportThrough(exporter, [span]));
  assert.deepEqual(exported, [2, 1], 'a flush goes at once');
});

test('a batch goes after the cap even when the foreground never quiets; without a foreground nothing waits', async () => {
  const { inner, exported } = recording();
  const exporter = new QuietExporter(inner);
  await exportThrough(exporter, [span]);
  assert.deepEqual(exported, [1], 'no foreground told: at once');
  exporter.quietForMs = () => 0;
  await exportThrough(exporter, [span, span, span]);
  assert.deepEqual(exported, [1, 3]);
});
