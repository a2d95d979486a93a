/**
 * Accessibility checks and screenshots of the real UI in Chromium, as every UI test takes them:
 * axe-core on the page as it is now (animations finished, so colours are the final ones), keeping
 * the serious and critical violations and the moderate rules this UI once broke and now keeps.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { ROOT } from './processes.js';
import { paintedScreenshot } from './renderer-page.js';

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
/** Moderate rules this UI once broke and now keeps. */
export const KEPT_MODERATE: ReadonlySet<string> = new Set(['heading-order', 'landmark-unique', 'page-has-heading-one', 'landmark-one-main', 'region']);
/** Where UI tests write the screenshots a person looks at (committed). */
export const SCREENS = path.join(ROOT, 'test/artifacts/screens');

export interface AxeFinding {
  state: string;
  rule: string;
  impact: string;
  help: string;
  nodes: string[];
}

/** The violations that count on the page as it is now, each named by `state` (what the test had on screen). */
export async function axeFindings(page: Page, state: string): Promise<AxeFinding[]> {
  // Injected through the debugger protocol: the page's CSP (script-src 'self') refuses inline scripts.
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(AXE_SOURCE);
  const violations = await page.evaluate(async () => {
    for (const animation of document.getAnimations()) animation.finish();
    const axe = (window as unknown as { axe: { run: (context: Document, options: object) => Promise<{ violations: Array<{ id: string; impact: string; help: string; nodes: Array<{ target: string[]; failureSummary?: string }> }> }> } }).axe;
    const result = await axe.run(document, { resultTypes: ['violations'] });
    return result.violations.map((violation) => ({ rule: violation.id, impact: violation.impact, help: violation.help, nodes: violation.nodes.slice(0, 3).map((node) => `${node.target.join(' ')}: ${(node.failureSummary ?? '').replace(/\s+/g, ' ')}`) }));
  });
  return violations.filter((violation) => violation.impact === 'serious' || violation.impact === 'critical' || KEPT_MODERATE.has(violation.rule)).map((violation) => ({ state, ...violation }));
}

/** Findings as a test failure shows them: state, impact, rule and what to fix, then the first nodes. */
export function describeFindings(findings: readonly AxeFinding[]): string {
  return findings.map((finding) => `${finding.state}: [${finding.impact}] ${finding.rule} — ${finding.help}\n    ${finding.nodes.join('\n    ')}`).join('\n');
}

/** One line per violation that counts (an empty list when the page passes). */
export async function axeViolations(page: Page, state: string): Promise<string[]> {
  return (await axeFindings(page, state)).map((finding) => `${finding.state}: [${finding.impact}] ${finding.rule} ${finding.nodes.join(', ')}`);
}

/** The picture a person sees once transitions end (a panel fading in), without waiting for them: test/artifacts/screens/<name>.png. */
export async function settledScreenshot(page: Page, name: string): Promise<void> {
  await page.evaluate(() => {
    for (const animation of document.getAnimations()) animation.finish();
  });
  await paintedScreenshot(page, path.join(SCREENS, `${name}.png`));
}
