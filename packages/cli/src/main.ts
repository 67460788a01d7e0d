#!/usr/bin/env node
/** The `ramify` executable. */
import { runCli } from './index.js';

process.exitCode = await runCli(process.argv);
