// `node --import ./test/helpers/module-trace.mjs …`: writes the URL of every module the process
// loads (ES modules, and the entry of each CommonJS package imported from them), one a line, to
// the file named by MODULE_TRACE_FILE — what a test checks to know a command did not load more
// than it needs.
import { register } from 'node:module';

register('./module-trace-hooks.mjs', import.meta.url, { data: { file: process.env.MODULE_TRACE_FILE } });
