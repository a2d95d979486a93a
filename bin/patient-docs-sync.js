#!/usr/bin/env node
import "../dist/bins/node/patient-docs-sync.js";
