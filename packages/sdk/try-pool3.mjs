import { Sandbox } from '@ramify/sdk';
const time = async (what, fn) => { const t = performance.now(); const r = await fn(); console.log(what, (performance.now() - t).toFixed(1)); return r; };
const s = await time('create', () => Sandbox.create({ template: 'base', timeoutMs: 600000 }));
for (let i = 0; i < 3; i++) {
  await time('pause', () => s.pause());
  await time('resume', () => s.resume());
}
const f = await time('fork8', () => s.fork({ count: 8 }));
await Promise.all(f.map((x) => x.kill()));
await s.kill();
