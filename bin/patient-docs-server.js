#!/usr/bin/env node
import '../dist/bins/node/patient-docs-server.js';
