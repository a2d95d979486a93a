#!/usr/bin/env node
import "../dist/electron/sync/cli/cli.js";
