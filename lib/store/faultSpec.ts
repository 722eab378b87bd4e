/**
 * Parses `NARWAL_STORE_FAULTS`, e.g. `put409=0.05,put412=0.02,put500=0.01,get503=0.01`.
 * Grammar per rule: `<op><kind>[applied]=<rate>` with op get|head|put|list|delete, kind
 * 409|412|500|503|timeout, and the `applied` suffix for a failure reported after the operation
 * took effect (S3's "outcome unknown").
 */
export interface FaultRule {
  readonly op: 'get' | 'head' | 'put' | 'list' | 'delete';
  readonly kind: '409' | '412' | '500' | '503' | 'timeout';
  readonly applied: boolean;
  readonly rate: number;
}

const RULE = /^(get|head|put|list|delete)(409|412|500|503|timeout)(applied)?$/;

export function parseFaultSpec(spec: string): FaultRule[] {
  const rules: FaultRule[] = [];
  for (const part of spec.split(',')) {
    const item = part.trim();
    if (item === '') continue;
    const [name = '', value = ''] = item.split('=');
    const match = RULE.exec(name.trim());
    const rate = Number(value);
    if (match === null || value.trim() === '' || !Number.isFinite(rate) || rate < 0 || rate > 1) {
      throw new Error(
        `invalid fault rule ${JSON.stringify(item)}: expected <op><kind>[applied]=<rate between 0 and 1>, ` +
          'op get|head|put|list|delete, kind 409|412|500|503|timeout (e.g. put409=0.05)',
      );
    }
    rules.push({
      op: match[1] as FaultRule['op'],
      kind: match[2] as FaultRule['kind'],
      applied: match[3] !== undefined,
      rate,
    });
  }
  return rules;
}
