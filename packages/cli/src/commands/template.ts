/** `ramify template build|list`. */
import type { RuntimeName } from '@ramify/contracts';
import type { Command } from 'commander';
import { existsSync } from 'node:fs';
import { buildTemplate, deleteTemplate, listTemplates, type TemplateBuildEvent, type TemplateInfo } from '@ramify/sdk';
import { action, type CliContext, type CliEnv } from '../context.js';
import { loadTemplateSpec } from '../template-spec.js';
import { listOf } from '../parse.js';
import { StatusLine } from '../output/spinner.js';
import { renderFields, renderTable } from '../output/table.js';
import { formatBytes, formatDuration, formatRelative } from '../output/format.js';

/**
 * Human rendering of build progress. On a TTY: a status line `[i/n] step` with elapsed seconds ticking,
 * and a finished line per step (`cached` or its duration). Elsewhere: one line per step as it starts.
 */
export class BuildProgress {
  private readonly status: StatusLine;
  private readonly tty: boolean;
  private current: { label: string; cached: boolean; startedAt: number } | undefined;

  constructor(private readonly ctx: CliContext, private readonly verbose: boolean) {
    this.tty = ctx.env.stderr.isTTY === true;
    this.status = new StatusLine('starting build', ctx.env.stderr, 0);
  }

  onEvent(event: TemplateBuildEvent): void {
    if (event.type === 'step') {
      this.finishStep();
      const label = `[${event.index}/${event.total}] ${event.step}`;
      this.current = { label, cached: event.cached, startedAt: Date.now() };
      if (this.tty) this.status.update(`${label}${event.cached ? ' (cached)' : ''}`);
      else this.ctx.note(`${label}${event.cached ? ' (cached)' : ''}`);
    } else if (event.type === 'log') {
      if (this.verbose) this.status.log(`  ${event.line}`);
      else if (this.tty && this.current) this.status.update(`${this.current.label} · ${event.line}`);
    } else {
      this.finishStep();
      this.status.stop();
    }
  }

  stop(): void {
    this.status.stop();
  }

  private finishStep(): void {
    if (!this.current || !this.tty) return;
    const { label, cached, startedAt } = this.current;
    this.status.log(`✓ ${label} ${cached ? '(cached)' : formatDuration(Date.now() - startedAt)}`);
    this.current = undefined;
  }
}

function templateFields(t: TemplateInfo, elapsedMs?: number): string {
  return renderFields([
    ['name', t.name], ['id', t.id], ['parent', t.parent ?? '-'], ['images', t.images.map((i) => `${i.runtime} ${i.snapshotId}`).join(', ')], ['size', formatBytes(t.sizeBytes)],
    ['envs', Object.keys(t.envs).length === 0 ? '-' : Object.entries(t.envs).map(([k, v]) => `${k}=${v}`).join(' ')],
    ['spec hash', t.specHash], ['created', t.createdAt], ...(elapsedMs !== undefined ? [['build time', formatDuration(elapsedMs)] as [string, string]] : []),
  ]);
}

/** Register `template` and its subcommands on `program`. */
export function registerTemplate(program: Command, env: CliEnv): void {
  const template = program.command('template').description('build, list and delete templates');

  template.command('build').argument('<spec>', "template spec file (YAML or JSON; files[].source paths are relative to it), or 'base' for the built-in base template")
    .description('build a template (cached steps are reused); --json prints the progress events as NDJSON')
    .addHelpText('after', `
The spec format (name, from, packages, files, run, envs) is described in docs/template-spec.md of the
Ramify repository; an example is examples/templates/python-tests.yaml.`)
    .option('-v, --verbose', 'print every build log line')
    .option('-r, --runtime <names>', 'runtimes to build an image for, comma-separated: gvisor, microvm (default: every runtime the daemon has)', listOf(['gvisor', 'microvm'] as const))
    .action(action(env, async (ctx, specPath: string, opts: { verbose?: boolean; runtime?: RuntimeName[] }) => {
      const spec = specPath === 'base' && !existsSync(specPath) ? (await import('@ramify/template-builder/spec')).BASE_TEMPLATE_SPEC : await loadTemplateSpec(specPath);
      const progress = ctx.json ? undefined : new BuildProgress(ctx, opts.verbose === true);
      let elapsedMs: number | undefined;
      try {
        const built = await buildTemplate(spec, {
          ...ctx.connection,
          ...(opts.runtime ? { runtimes: opts.runtime } : {}),
          onEvent: (event) => {
            if (ctx.json) ctx.print(JSON.stringify(event));
            if (event.type === 'done') elapsedMs = event.elapsedMs;
            progress?.onEvent(event);
          },
        });
        if (!ctx.json) ctx.print(templateFields(built, elapsedMs));
      } finally {
        progress?.stop();
      }
    }));

  template.command('delete').alias('rm').argument('<name>', 'template name or id').description('delete a template and its images (refused while a running or paused sandbox was made from it)')
    .action(action(env, async (ctx, name: string) => {
      await ctx.spin(`deleting template ${name}`, () => deleteTemplate(name, ctx.connection));
      ctx.output({ deleted: name }, () => `${name} deleted`);
    }));

  template.command('list').alias('ls').description('list templates')
    .addHelpText('after', `
SIZE (sizeBytes) is the template's root filesystem plus its largest runtime image, counted in
apparent file sizes: the whole filesystem (for a template built 'from' another too, not only what it
adds), plus the booted-and-idle checkpoint: a few MiB for gvisor, the VM's whole RAM file for microvm
(1 GiB by default, mostly holes on disk). So a template with a microvm image lists about 1 GiB more
than one without, and SIZE is not the disk space the template takes.`)
    .action(action(env, async (ctx) => {
      const templates = await ctx.spin('listing templates', () => listTemplates(ctx.connection));
      ctx.output(templates, () => (templates.length === 0 ? 'no templates' : renderTable(['NAME', 'ID', 'RUNTIMES', 'PARENT', 'SIZE', 'CREATED'],
        templates.map((t) => [t.name, t.id, t.images.map((i) => i.runtime).join(','), t.parent ?? '-', formatBytes(t.sizeBytes), formatRelative(t.createdAt)]))));
    }));
}
