#!/usr/bin/env node
import '../dist/server/admin/cli.js';
