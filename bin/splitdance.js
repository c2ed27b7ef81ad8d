#!/usr/bin/env node
import { main, reportBug } from '../dist/bundle/cli/main.mjs';

// What escapes the error boundary (an error thrown from an event handler) is a bug too: exit 70.
process.on('uncaughtException', (err) => {
  reportBug(err, process, process.argv.includes('--verbose'));
  process.exit(70);
});

main(process.argv).then((code) => {
  process.exitCode = code;
});
