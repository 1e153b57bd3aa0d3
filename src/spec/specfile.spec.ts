import jobSpecSchema from './jobspec.schema.json';
import argvCases from './argv_cases.json';
import {
  compactSpec,
  entryArgv,
  formSchema,
  formSections,
  formSpec,
  shellLine,
  emptyRequired,
  newSpecDefaults,
  newSpecText,
  sectionSchema,
  topField,
  parseSpecText,
  schemaFields,
  specToText,
  validateSpec
} from './specfile';

describe('job spec files', () => {
  it('the form renders every field of the generated JobSpec schema', () => {
    const fields = Object.keys(jobSpecSchema.properties);
    expect(fields).toEqual(
      expect.arrayContaining([
        'volumes',
        'secret_env',
        'rank_table_version',
        'task_name'
      ])
    );
    expect(Object.keys(formSchema().properties)).toEqual(fields);
    expect(schemaFields()).toEqual(fields);
    // nullable fields become plain ones; the entry point is an inline optional object
    const props = formSchema().properties;
    expect(props.cpu.type).toBe('string');
    expect(props.entry.anyOf).toBeUndefined();
    expect(props.entry.$ref).toBe('#/definitions/EntryPoint');
  });

  it('groups every field into the sections the Python field info names', () => {
    const sections = formSections();
    expect(sections.map(s => s.title)).toEqual(jobSpecSchema['x-groups']);
    expect(sections[0]).toEqual({
      title: 'Basics',
      fields: ['name', 'image', 'namespace', 'framework']
    });
    const grouped = sections.flatMap(s => s.fields).sort();
    expect(grouped).toEqual(Object.keys(jobSpecSchema.properties).sort());
    // a field declared later (with its x-group) lands in its section
    const withNew = JSON.parse(JSON.stringify(jobSpecSchema));
    withNew.properties.network_topology = {
      type: 'string',
      'x-group': 'Scheduling and faults'
    };
    const scheduling = formSections(withNew).find(
      s => s.title === 'Scheduling and faults'
    );
    expect(scheduling?.fields).toContain('network_topology');
    expect(formSchema().properties.name['x-group']).toBeUndefined();
  });

  it('stores only what differs from the defaults, and reads it back', () => {
    const spec = {
      name: 'bert',
      image: 'bert:v1',
      namespace: 'default',
      nodes: 4,
      npus_per_node: 8,
      env: {},
      cpu: '',
      entry: { script: '' }
    };
    expect(compactSpec(spec)).toEqual({
      name: 'bert',
      image: 'bert:v1',
      nodes: 4
    });
    const text = specToText(spec);
    expect(text).toBe('name: bert\nimage: bert:v1\nnodes: 4\n');
    expect(parseSpecText(text)).toEqual({
      spec: { name: 'bert', image: 'bert:v1', nodes: 4 }
    });
  });

  it('says what is wrong with a file the form cannot show', () => {
    expect(parseSpecText('name: [')).toEqual({
      error: expect.stringContaining('unexpected end')
    });
    expect(parseSpecText('- a\n- b')).toEqual({
      error: expect.stringContaining('expected a mapping')
    });
    expect(parseSpecText('name: a\ngpus: 8')).toEqual({
      error: expect.stringContaining('unknown field(s) gpus')
    });
    expect(parseSpecText('x'.repeat(300 * 1024))).toEqual({
      error: expect.stringContaining('256 KiB')
    });
  });

  it('validates each field by the schema, leaving ${param} values to submit time', () => {
    const errors = validateSpec({ name: 'Bad_Name', image: '', nodes: 0 });
    const paths = errors.map(e => e.path).sort();
    expect(paths).toEqual(['image', 'name', 'nodes']);
    expect(validateSpec({ name: 'ok', image: '${image}', nodes: 2 })).toEqual(
      []
    );
    const fresh = parseSpecText(newSpecText('j', { image: 'bert:v1' }));
    expect('spec' in fresh && validateSpec(fresh.spec)).toEqual([]);
  });
});

describe('a new job starts from the last job and the shared folder (#31.1)', () => {
  it("takes the newest job's image and the first profile with a shared folder", () => {
    const defaults = newSpecDefaults(
      [
        { image: 'old:1', created: '2026-12-01T10:00:00Z' },
        { image: '', created: '2026-12-05T10:00:00Z' },
        { image: 'new:2', created: '2026-12-04T10:00:00Z' }
      ],
      [{ shared: null }, { shared: { instance_path: '/mnt/sfs/team/' } }]
    );
    expect(defaults).toEqual({ image: 'new:2', shared: '/mnt/sfs/team/' });
    const text = newSpecText('my-job', defaults);
    const parsed = parseSpecText(text);
    expect('spec' in parsed && parsed.spec.image).toBe('new:2');
    expect('spec' in parsed && parsed.spec.entry).toEqual({
      script: '/mnt/sfs/team/train.py',
      args: []
    });
    // no ${template} and no relative script: the form opens valid
    expect(text).not.toContain('${');
    expect('spec' in parsed && validateSpec(parsed.spec)).toEqual([]);
  });

  it('an unknown image is a field to fill in, not a template parameter', () => {
    const parsed = parseSpecText(
      newSpecText('my-job', newSpecDefaults([], []))
    );
    expect('spec' in parsed && emptyRequired(parsed.spec)).toEqual(['image']);
    expect(newSpecText()).not.toContain('${');
    expect(emptyRequired({ name: 'a', image: 'b' })).toEqual([]);
    expect(topField('spec.entry.script')).toBe('entry');
    expect(topField('volumes[0].kind')).toBe('volumes');
  });

  it('a section renders only its fields, required ones first', () => {
    const { schema, order } = sectionSchema(['namespace', 'image', 'name']);
    expect(Object.keys(schema.properties)).toEqual([
      'namespace',
      'image',
      'name'
    ]);
    expect(order).toEqual(['name', 'image', 'namespace']);
    expect(schema.required).toEqual(['name', 'image']);
    expect(schema.definitions.EntryPoint).toBeDefined();
  });
});

/** The argv <-> line table the core's splitter is checked on too (tests/core/test_argv.py). */
const ROUND_TRIP: { cases: { argv: string[]; line: string }[] } = argvCases;

describe('arguments are argv (#24.5)', () => {
  it('the form shows one Arguments line, which the server splits as a shell does', () => {
    const args = formSchema().definitions.EntryPoint.properties.args;
    expect(args.type).toBe('string');
    expect(args.title).toBe('Arguments');
    expect(
      validateSpec({
        name: 'j',
        image: 'i',
        entry: { script: 'train.py', args: '--steps 300' }
      })
    ).toEqual([]);
  });

  it.each(ROUND_TRIP.cases)(
    'a list of arguments is shown as the line $line',
    c => {
      expect(shellLine(c.argv)).toBe(c.line);
    }
  );

  it('a spec file with a list shows it as a line; the server’s argv is the preview', () => {
    const spec = {
      name: 'j',
      entry: { script: 't.py', args: ['--tag', 'a b'] }
    };
    expect(formSpec(spec)).toEqual({
      name: 'j',
      entry: { script: 't.py', args: "--tag 'a b'" }
    });
    expect(entryArgv(spec)).toEqual(['t.py', '--tag', 'a b']);
    expect(entryArgv({ name: 'j', command: ['x'] })).toBeNull();
  });
});
