/**
 * `node --import <this file>`: record which modules a process loads (see `import-recorder-hooks.ts`),
 * for tests of what the CLI loads when it starts.
 */
import { register } from 'node:module';

register('./import-recorder-hooks.js', import.meta.url);
