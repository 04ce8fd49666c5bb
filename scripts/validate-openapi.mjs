#!/usr/bin/env node
// Validates an OpenAPI document against the OpenAPI 3 schema: `node scripts/validate-openapi.mjs <url|file>`.
// Prints `valid OpenAPI <version>` or the validation error and exits 1.
import { readFile } from 'node:fs/promises';
import SwaggerParser from '@apidevtools/swagger-parser';

const source = process.argv[2];
if (!source) {
  console.error('usage: validate-openapi.mjs <url|file>');
  process.exit(2);
}
const text = /^https?:/.test(source) ? await (await fetch(source)).text() : await readFile(source, 'utf8');
try {
  const api = await SwaggerParser.validate(JSON.parse(text));
  console.log(`valid OpenAPI ${api.openapi}`);
} catch (error) {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(1);
}
