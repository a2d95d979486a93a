/**
 * The leaf values of a small XML file as (path, value) pairs: element text by its path of element
 * names, attributes as a last part of their own, and the name/value pairs 3Shape writes as
 * `<Property name="Patient_FirstName" value="Theo"/>` by their name. Namespaces are dropped. Enough
 * for a scanner's order file; no DTDs, no external entities (nothing is ever fetched).
 */

export interface XmlField {
  path: string[];
  value: string;
}

const TOKEN = /<!--[\s\S]*?-->|<\?[\s\S]*?\?>|<!\[CDATA\[([\s\S]*?)\]\]>|<![^>]*>|<(\/?)([A-Za-z_][\w.:-]*)((?:\s+[A-Za-z_][\w.:-]*\s*=\s*(?:"[^"]*"|'[^']*'))*)\s*(\/?)>|([^<]+)|</g;
const ATTRIBUTE = /([A-Za-z_][\w.:-]*)\s*=\s*(?:"([^"]*)"|'([^']*)')/g;
/** Order files are kilobytes; more than this many fields is not one. */
const MAX_FIELDS = 5000;

export function readXmlFields(xml: string): XmlField[] {
  const fields: XmlField[] = [];
  const stack: Array<{ name: string; text: string; children: number }> = [];
  for (const token of xml.matchAll(TOKEN)) {
    if (fields.length >= MAX_FIELDS) break;
    const [whole, cdata, closing, rawName, attributes, selfClosing, text] = token;
    if (cdata !== undefined || text !== undefined) {
      const top = stack[stack.length - 1];
      if (top) top.text += cdata ?? decodeEntities(text!);
      continue;
    }
    if (rawName === undefined || whole.startsWith('<!') || whole.startsWith('<?')) continue;
    const name = localName(rawName);
    if (closing === '/') {
      const index = findOpen(stack, name);
      if (index < 0) continue;
      const closed = stack[index]!;
      const path = stack.slice(0, index + 1).map((entry) => entry.name);
      stack.length = index;
      if (closed.children === 0 && closed.text.trim() !== '') fields.push({ path, value: closed.text.trim() });
      continue;
    }
    const parent = stack[stack.length - 1];
    if (parent) parent.children += 1;
    const path = [...stack.map((entry) => entry.name), name];
    const attributeValues = readAttributes(attributes ?? '');
    const propertyName = attributeValues.get('name');
    const propertyValue = attributeValues.get('value');
    if (propertyName !== undefined && propertyValue !== undefined) fields.push({ path: [...path.slice(0, -1), propertyName], value: propertyValue });
    else for (const [attribute, value] of attributeValues) fields.push({ path: [...path, attribute], value });
    if (selfClosing !== '/') stack.push({ name, text: '', children: 0 });
  }
  return fields;
}

function findOpen(stack: ReadonlyArray<{ name: string }>, name: string): number {
  for (let index = stack.length - 1; index >= 0; index -= 1) if (stack[index]!.name === name) return index;
  return -1;
}

function readAttributes(text: string): Map<string, string> {
  const values = new Map<string, string>();
  for (const match of text.matchAll(ATTRIBUTE)) values.set(localName(match[1]!), decodeEntities(match[2] ?? match[3] ?? ''));
  return values;
}

function localName(name: string): string {
  const colon = name.lastIndexOf(':');
  return colon < 0 ? name : name.slice(colon + 1);
}

const NAMED: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };

function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-fA-F]+|#\d+|[a-z]+);/g, (whole, entity: string) => {
    if (entity.startsWith('#x')) return codePoint(parseInt(entity.slice(2), 16), whole);
    if (entity.startsWith('#')) return codePoint(parseInt(entity.slice(1), 10), whole);
    return NAMED[entity] ?? whole;
  });
}

function codePoint(value: number, fallback: string): string {
  return Number.isInteger(value) && value > 0 && value <= 0x10ffff ? String.fromCodePoint(value) : fallback;
}
