/**
 * Evidence from a case's own name: rules the clinic adds, such as `{chart}_*` ("10231_2026-11-28"
 * is chart 10231) or `{last}_{first}_*`, plus what scanners put in names by themselves (iTero's
 * `OrthoCAD_Export_<order>`, a Patient Docs patient id written into the name).
 */
import { isUuid, parseBirthDate, personName, type Evidence, type EvidenceSource } from './evidence.js';

const PLACEHOLDERS: Record<string, string> = {
  // A chart number has a digit: `{chart}_*` must not read "OrthoCAD" or a surname as one.
  chart: '(?<chart>(?=[^_\\s]*\\d)[^_\\s]+)',
  id: '(?<id>[0-9a-fA-F-]{36})',
  last: '(?<last>[^_]+)',
  first: '(?<first>[^_]+)',
  name: '(?<name>[^_]+)',
  birth: '(?<birth>\\d{4}-?\\d{2}-?\\d{2})',
};

export type RuleProblem = string;

/** Why a rule cannot be used, in plain words, or undefined when it can. */
export function checkRule(rule: string): RuleProblem | undefined {
  if (rule.trim() === '') return 'A rule cannot be empty.';
  const names = [...rule.matchAll(/\{([^}]*)\}/g)].map((match) => match[1]!);
  const unknown = names.filter((name) => !(name in PLACEHOLDERS));
  if (unknown.length > 0) return `Unknown part {${unknown[0]}} in '${rule}': use {chart}, {id}, {last}, {first}, {name}, {birth} and *.`;
  if (new Set(names).size !== names.length) return `'${rule}' uses a part twice.`;
  if (names.length === 0) return `'${rule}' has no part to read ({chart}, {id}, {last}, {first}, {name} or {birth}).`;
  return undefined;
}

export function ruleRegExp(rule: string): RegExp {
  let source = '';
  for (const piece of rule.split(/(\{[a-z]+\}|\*)/)) {
    if (piece === '*') source += '.*';
    else if (/^\{[a-z]+\}$/.test(piece)) source += PLACEHOLDERS[piece.slice(1, -1)] ?? '';
    else source += piece.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${source}$`, 'u');
}

/** What the first rule that fits the name says; a file is also tried without its extension. */
export function evidenceFromName(caseName: string, isFile: boolean, rules: readonly string[]): Evidence[] {
  const source: EvidenceSource = isFile ? 'file-name' : 'folder-name';
  const evidence: Evidence[] = [];
  const stem = isFile ? caseName.replace(/\.[^.]+$/, '') : caseName;
  for (const rule of rules) {
    if (checkRule(rule) !== undefined) continue;
    const pattern = ruleRegExp(rule);
    const match = pattern.exec(caseName) ?? (stem !== caseName ? pattern.exec(stem) : null);
    if (!match?.groups) continue;
    evidence.push(...fromGroups(match.groups, source));
    break;
  }
  const order = /^OrthoCAD_Export_(\d+)/i.exec(caseName);
  if (order) evidence.push({ kind: 'order', value: order[1]!, source });
  for (const token of caseName.split(/[_\s]+/)) {
    if (isUuid(token) && !evidence.some((item) => item.kind === 'identifier' && item.system === 'patient-id')) {
      evidence.push({ kind: 'identifier', system: 'patient-id', value: token.toLowerCase(), source });
    }
  }
  return evidence;
}

function fromGroups(groups: Record<string, string | undefined>, source: EvidenceSource): Evidence[] {
  const evidence: Evidence[] = [];
  const chart = groups.chart?.trim();
  if (chart) evidence.push({ kind: 'identifier', system: 'chart', value: chart, source });
  const id = groups.id?.trim();
  if (id && isUuid(id)) evidence.push({ kind: 'identifier', system: 'patient-id', value: id.toLowerCase(), source });
  const text = groups.name?.trim() || personName(groups.last, groups.first);
  if (text) {
    evidence.push({ kind: 'name', text, ...(groups.last ? { family: groups.last.trim() } : {}), ...(groups.first ? { given: groups.first.trim() } : {}), source });
  }
  const birth = groups.birth ? parseBirthDate(groups.birth) : undefined;
  if (birth) evidence.push({ kind: 'birth-date', value: birth, source });
  return evidence;
}
