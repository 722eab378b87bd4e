/**
 * A validator of CloudFormation templates against AWS's own resource schemas, as published in
 * `@aws-cdk/aws-service-spec` (the registry schemas CloudFormation validates with, compiled into
 * one database). It checks what a deploy would otherwise find out after minutes:
 * - every resource type exists;
 * - every property exists on its type (or nested type), required properties are present, and
 *   literal values have the property's type (strings, numbers, integers, booleans, lists, maps,
 *   allowed values where the schema lists them);
 * - resource attributes are the documented ones (DependsOn, Condition, UpdatePolicy, ...);
 * - `Ref`, `Fn::GetAtt`, `DependsOn` and `Condition` name things the template has, and a GetAtt
 *   names an attribute its resource type has.
 * Intrinsic functions stand for a value of whatever type is expected; `Fn::If` is checked branch
 * by branch. https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/intrinsic-function-reference.html
 */
import { loadAwsServiceSpec } from '@aws-cdk/aws-service-spec';
import type { Property, PropertyType, Resource, SpecDatabase } from '@aws-cdk/service-spec-types';

export interface Template {
  readonly Parameters?: Record<string, unknown>;
  readonly Conditions?: Record<string, unknown>;
  readonly Resources: Record<string, TemplateResource>;
  readonly Outputs?: Record<string, unknown>;
}

export interface TemplateResource {
  readonly Type: string;
  readonly Properties?: Record<string, unknown>;
  readonly [attribute: string]: unknown;
}

/** https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-product-attribute-reference.html */
const RESOURCE_ATTRIBUTES = new Set([
  'Type',
  'Properties',
  'DependsOn',
  'Condition',
  'CreationPolicy',
  'DeletionPolicy',
  'UpdatePolicy',
  'UpdateReplacePolicy',
  'Metadata',
]);

/** https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/pseudo-parameter-reference.html */
const PSEUDO_PARAMETERS = new Set([
  'AWS::AccountId',
  'AWS::NotificationARNs',
  'AWS::NoValue',
  'AWS::Partition',
  'AWS::Region',
  'AWS::StackId',
  'AWS::StackName',
  'AWS::URLSuffix',
]);

let database: Promise<SpecDatabase> | undefined;

/** Every problem found in the template, one line each; empty when it is valid. */
export async function validateTemplate(template: Template): Promise<string[]> {
  database ??= loadAwsServiceSpec();
  return new Checker(await database, template).run();
}

class Checker {
  readonly problems: string[] = [];

  constructor(
    private readonly db: SpecDatabase,
    private readonly template: Template,
  ) {}

  run(): string[] {
    for (const [id, resource] of Object.entries(this.template.Resources)) this.resource(id, resource);
    this.references(this.template.Outputs ?? {}, 'Outputs');
    this.references(this.template.Conditions ?? {}, 'Conditions');
    return this.problems;
  }

  private resource(id: string, resource: TemplateResource): void {
    for (const key of Object.keys(resource))
      if (!RESOURCE_ATTRIBUTES.has(key)) this.problems.push(`${id}: unknown resource attribute ${key}`);
    for (const dependency of [resource.DependsOn ?? []].flat())
      if (typeof dependency !== 'string' || !(dependency in this.template.Resources))
        this.problems.push(`${id}: DependsOn names no resource: ${String(dependency)}`);
    if (resource.Condition !== undefined && !this.hasCondition(resource.Condition))
      this.problems.push(`${id}: Condition names no condition: ${String(resource.Condition)}`);
    this.references(resource, id);
    if (resource.Type.startsWith('Custom::') || resource.Type === 'AWS::CloudFormation::CustomResource')
      return;
    const spec = this.db.lookup('resource', 'cloudFormationType', 'equals', resource.Type)[0];
    if (!spec) {
      this.problems.push(`${id}: unknown resource type ${resource.Type}`);
      return;
    }
    this.properties(`${id} (${resource.Type})`, spec.properties, resource.Properties ?? {});
  }

  private properties(where: string, spec: Record<string, Property>, value: unknown): void {
    if (isIntrinsic(value)) {
      this.intrinsic(where, value, (branch) => this.properties(where, spec, branch));
      return;
    }
    if (!isObject(value)) {
      this.problems.push(`${where}: expected an object, got ${describe(value)}`);
      return;
    }
    for (const [name, property] of Object.entries(spec))
      if (property.required && !(name in value)) this.problems.push(`${where}: missing required ${name}`);
    for (const [name, child] of Object.entries(value)) {
      const property = spec[name];
      if (!property) {
        this.problems.push(`${where}: unknown property ${name}`);
        continue;
      }
      this.value(`${where}.${name}`, [property.type, ...(property.previousTypes ?? [])], child);
    }
  }

  /** The value must fit one of the types (a property's current type or one it had before). */
  private value(where: string, types: PropertyType[], value: unknown): void {
    if (isIntrinsic(value)) {
      this.intrinsic(where, value, (branch) => this.value(where, types, branch));
      return;
    }
    let best: string[] | undefined;
    for (const type of types) {
      const attempt = new Checker(this.db, this.template);
      attempt.typed(where, type, value);
      if (attempt.problems.length === 0) return;
      if (!best || attempt.problems.length < best.length) best = attempt.problems;
    }
    this.problems.push(...(best ?? []));
  }

  private typed(where: string, type: PropertyType, value: unknown): void {
    if (isIntrinsic(value)) {
      this.intrinsic(where, value, (branch) => this.typed(where, type, branch));
      return;
    }
    switch (type.type) {
      case 'string':
        // CloudFormation passes numbers and booleans on as their text.
        if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean')
          this.problems.push(`${where}: expected a string, got ${describe(value)}`);
        else if (type.allowedValues && !type.allowedValues.includes(String(value)))
          this.problems.push(`${where}: ${String(value)} is not one of ${type.allowedValues.join(', ')}`);
        return;
      case 'number':
        if (!isNumeric(value, /^-?\d+(\.\d+)?$/))
          this.problems.push(`${where}: expected a number, got ${describe(value)}`);
        return;
      case 'integer':
        if (!isNumeric(value, /^-?\d+$/))
          this.problems.push(`${where}: expected an integer, got ${describe(value)}`);
        return;
      case 'boolean':
        if (typeof value !== 'boolean' && value !== 'true' && value !== 'false')
          this.problems.push(`${where}: expected a boolean, got ${describe(value)}`);
        return;
      case 'json':
        if (!isObject(value) && !Array.isArray(value) && typeof value !== 'string')
          this.problems.push(`${where}: expected JSON, got ${describe(value)}`);
        return;
      case 'date-time':
        if (typeof value !== 'string')
          this.problems.push(`${where}: expected a date, got ${describe(value)}`);
        return;
      case 'null':
        return;
      case 'tag':
        this.properties(where, TAG, value);
        return;
      case 'array':
        if (!Array.isArray(value)) {
          this.problems.push(`${where}: expected a list, got ${describe(value)}`);
          return;
        }
        for (const [i, item] of value.entries()) this.typed(`${where}[${i}]`, type.element, item);
        return;
      case 'map':
        if (!isObject(value)) {
          this.problems.push(`${where}: expected a map, got ${describe(value)}`);
          return;
        }
        for (const [key, item] of Object.entries(value)) this.typed(`${where}.${key}`, type.element, item);
        return;
      case 'union':
        this.value(where, type.types, value);
        return;
      case 'ref':
        this.properties(where, this.db.get('typeDefinition', type.reference).properties, value);
        return;
    }
  }

  /** An intrinsic stands for any value, except that Fn::If's branches are checked as values. */
  private intrinsic(where: string, value: Record<string, unknown>, branch: (value: unknown) => void): void {
    const [name, args] = Object.entries(value)[0] ?? [];
    if (name !== 'Fn::If') return;
    if (!Array.isArray(args) || args.length !== 3) {
      this.problems.push(`${where}: Fn::If needs [condition, then, else]`);
      return;
    }
    if (!this.hasCondition(args[0]))
      this.problems.push(`${where}: Fn::If names no condition: ${String(args[0])}`);
    for (const option of args.slice(1))
      if (!(isObject(option) && option.Ref === 'AWS::NoValue')) branch(option);
  }

  /** Every Ref and Fn::GetAtt inside `node` names a resource (and attribute) or parameter. */
  private references(node: unknown, where: string): void {
    if (Array.isArray(node)) {
      for (const item of node) this.references(item, where);
      return;
    }
    if (!isObject(node)) return;
    for (const [key, value] of Object.entries(node)) {
      if (key === 'Ref' && typeof value === 'string') this.ref(where, value);
      else if (key === 'Fn::GetAtt') this.getAtt(where, value);
      else if (key === 'Fn::Sub') this.sub(where, value);
      else this.references(value, where);
    }
  }

  private ref(where: string, name: string): void {
    if (PSEUDO_PARAMETERS.has(name)) return;
    if (name in this.template.Resources || name in (this.template.Parameters ?? {})) return;
    this.problems.push(`${where}: Ref names nothing: ${name}`);
  }

  private getAtt(where: string, value: unknown): void {
    const [id, attribute] = typeof value === 'string' ? value.split(/\.(.*)/s) : (value as unknown[]);
    if (typeof id !== 'string' || typeof attribute !== 'string') {
      this.problems.push(`${where}: malformed Fn::GetAtt ${JSON.stringify(value)}`);
      return;
    }
    const target = this.template.Resources[id];
    if (!target) {
      this.problems.push(`${where}: Fn::GetAtt names no resource: ${id}`);
      return;
    }
    const spec: Resource | undefined = this.db.lookup(
      'resource',
      'cloudFormationType',
      'equals',
      target.Type,
    )[0];
    if (spec && !(attribute in spec.attributes))
      this.problems.push(`${where}: ${target.Type} has no attribute ${attribute} (Fn::GetAtt ${id})`);
  }

  /** `${Name}` and `${Name.Attribute}` in a Fn::Sub string, less the names of its own map. */
  private sub(where: string, value: unknown): void {
    const [text, variables] = typeof value === 'string' ? [value, {}] : (value as [unknown, unknown]);
    if (typeof text !== 'string') return;
    const own = isObject(variables) ? variables : {};
    this.references(own, where);
    for (const match of text.matchAll(/\$\{([^!}][^}]*)\}/g)) {
      const name = match[1] as string;
      if (name in own) continue;
      const dot = name.indexOf('.');
      if (dot > 0 && !name.startsWith('AWS::')) this.getAtt(where, [name.slice(0, dot), name.slice(dot + 1)]);
      else this.ref(where, name);
    }
  }

  private hasCondition(name: unknown): boolean {
    return typeof name === 'string' && name in (this.template.Conditions ?? {});
  }
}

const TAG: Record<string, Property> = {
  Key: { type: { type: 'string' }, required: true },
  Value: { type: { type: 'string' }, required: true },
};

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isIntrinsic(value: unknown): value is Record<string, unknown> {
  if (!isObject(value)) return false;
  const keys = Object.keys(value);
  return keys.length === 1 && (keys[0] === 'Ref' || (keys[0] as string).startsWith('Fn::'));
}

function isNumeric(value: unknown, pattern: RegExp): boolean {
  if (typeof value === 'number') return pattern.test(String(value));
  return typeof value === 'string' && pattern.test(value);
}

function describe(value: unknown): string {
  return JSON.stringify(value)?.slice(0, 80) ?? String(value);
}
