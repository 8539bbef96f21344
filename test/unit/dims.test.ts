// SPDX-License-Identifier: MIT
// Dimension expressions (lib/eval/dims.ts): the grammar's values, every error with its message, and two properties
// checked with fast-check: random text never makes the parser throw anything but TypeError or RangeError, and random
// small trees, printed as text, evaluate as a plain BigInt reference evaluator says.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DIM_EXPR_LIMITS, evalDimExpr, parseDimExpr } from '../../lib/eval/dims.js';

/** The error `f` throws (fails the test when it does not throw). */
function errorOf(f: () => unknown): Error {
  try {
    f();
  } catch (e) {
    return e as Error;
  }
  throw new Error('did not throw');
}

const DIMS = { m: 4096, n: 1 << 20, k: 96 };

describe('parseDimExpr and evalDimExpr: values', () => {
  const table: [text: string, value: number][] = [
    ['0', 0],
    ['256', 256],
    ['1_048_576', 1 << 20],
    ['9007199254740991', Number.MAX_SAFE_INTEGER],
    ['n', 1 << 20],
    ['ceil(n / 256)', 4096],
    ['ceil(1000 / 256)', 4],
    ['floor(1000 / 256)', 3],
    ['ceil(-7 / 2)', -3],
    ['floor(-7 / 2)', -4],
    ['cdiv(1000, 256)', 4],
    ['cdiv(-7, 2)', -3],
    ['cdiv(7, -2)', -3],
    ['min(m, 1024)', 1024],
    ['max(m, 1024)', 4096],
    ['min(5)', 5],
    ['min(3, 1, 2)', 1],
    ['max(3, 7, 2, 7)', 7],
    ['min(1 / 2, 1 / 3) * 6', 2],
    ['4 * k', 384],
    ['1 << 20', 1 << 20],
    ['1 << 2 + 1', 8], // + binds tighter than <<, as in C
    ['1 << 2 << 3', 32], // left: (1 << 2) << 3
    ['(1 << 2) + 1', 5],
    ['3 << 0', 3],
    ['1 << 52', 2 ** 52],
    ['1 + 2 * 3', 7],
    ['(1 + 2) * 3', 9],
    ['10 - 4 - 3', 3], // left: (10 - 4) - 3
    ['10 - (4 - 3)', 9],
    ['64 / 4 / 2', 8], // left
    ['64 / (4 / 2)', 32],
    ['7 / 2 * 2', 7], // exact: 7/2 · 2
    ['100 % 7 % 4', 2], // left: 2 % 4
    ['7 % 3', 1],
    ['-7 % 3', 2], // a - b · floor(a / b): the divisor's sign, as Python
    ['7 % -3', -2],
    ['(7 / 2) % 1 * 2', 1],
    ['-n', -(1 << 20)],
    ['--n', 1 << 20],
    ['- - 3', 3],
    ['-2 * 3', -6],
    ['2 * -3', -6],
    ['2--3', 5],
    ['-(2 + 3)', -5],
    ['-1 << 3', -8],
    ['  ceil ( n\t/\n256 )  ', 4096],
    ['ceil(n/32)*ceil(m/32)', 32768 * 128],
    ['cdiv(m * k, 128) + 1', 3073],
    ['ceil(ceil(ceil(n / 3) / 3) / 3)', 38837],
    ['min(max(k, 100), 200)', 100],
    ['((((n))))', 1 << 20],
  ];
  it.each(table)('%s = %d', (text, value) => {
    expect(evalDimExpr(text, DIMS)).toBe(value);
    expect(evalDimExpr(parseDimExpr(text), DIMS)).toBe(value);
  });

  it('takes a safe integer as the expression of its decimal text', () => {
    expect(parseDimExpr(256)).toEqual({ text: '256', names: [] });
    expect(evalDimExpr(256, {})).toBe(256);
    expect(evalDimExpr(-3, {})).toBe(-3);
  });

  it('lists the names an expression uses, each once, in order of first use, frozen', () => {
    const expr = parseDimExpr('ceil(n / b) * n + min(m, b, n)');
    expect(expr).toEqual({ text: 'ceil(n / b) * n + min(m, b, n)', names: ['n', 'b', 'm'] });
    expect(Object.isFrozen(expr) && Object.isFrozen(expr.names)).toBe(true);
    expect(parseDimExpr('1 << 20').names).toEqual([]);
    expect(parseDimExpr('_x1 + X_').names).toEqual(['_x1', 'X_']);
  });

  it('evaluates a copy of a parsed expression (its text parsed again), and bigint dimensions', () => {
    const copy = JSON.parse(JSON.stringify(parseDimExpr('ceil(n / 256)'))) as { text: string; names: string[] };
    expect(evalDimExpr(copy, { n: 1000 })).toBe(4);
    expect(evalDimExpr('n * 2', { n: 1n << 40n })).toBe(2 ** 41);
    expect(evalDimExpr('n', { n: 0 }, { min: 0 })).toBe(0);
  });

  it('keeps exact values where doubles would round', () => {
    // 2^53 - 1 is odd: (2^53 - 1) / 2 is not an integer, which a double of it divided by 2 would hide in 2^52.
    expect(evalDimExpr('ceil(n / 2)', { n: Number.MAX_SAFE_INTEGER })).toBe(2 ** 52);
    expect(evalDimExpr('n * n / n', { n: Number.MAX_SAFE_INTEGER })).toBe(Number.MAX_SAFE_INTEGER);
    expect(evalDimExpr('(1 << 64) / (1 << 60)', {})).toBe(16);
  });
});

describe('parseDimExpr: syntax errors', () => {
  const table: [text: string, message: string][] = [
    [
      'ceil(n / ',
      "Expected an operand (a number, a name, a call such as ceil(n / 256), or '(') for the dimension expression at " +
        'column 10 but received the end of the expression\n  ceil(n / \n           ^',
    ],
    [
      '',
      "Expected an operand (a number, a name, a call such as ceil(n / 256), or '(') for the dimension expression at",
    ],
    [
      'n n',
      'Expected an operator (+ - * / % <<) or the end of the expression for the dimension expression at column 3',
    ],
    [
      '(n + 1',
      "Expected ')' to close the '(' at column 1 for the dimension expression at column 7 but received the end",
    ],
    [
      'n + 1)',
      'Expected an operator (+ - * / % <<) or the end of the expression for the dimension expression at column',
    ],
    ['min(n 2)', "Expected ',' or ')' to close the call of min at column 1 for the dimension expression at column 7"],
    ['min(n,)', 'Expected an operand (a number, a name, a call such as ceil(n / 256), or'],
    ['2n', "Expected a decimal integer (digits, a single '_' between two of them, no leading zero) for the dimension"],
    ['1e6', "Expected a decimal integer (digits, a single '_' between two of them, no leading zero) for the"],
    ['0x10', "Expected a decimal integer (digits, a single '_' between two of them, no leading zero) for the"],
    ['1__0', "Expected a decimal integer (digits, a single '_' between two of them, no leading zero) for the"],
    ['1_', "Expected a decimal integer (digits, a single '_' between two of them, no leading zero) for the"],
    ['010', "Expected a decimal integer (digits, a single '_' between two of them, no leading zero) for the"],
    [
      '1.5',
      'Expected a number, a name or one of + - * / % << ( ) , for the dimension expression at column 2 but ' +
        "received '.'",
    ],
    ['n >> 1', 'Expected a number, a name or one of + - * / % << ( ) , for the dimension expression at column 3'],
    ['n < 1', "Expected '<<' for the dimension expression at column 3 but received '<'"],
    ['+n', 'Expected an operand (a number, a name, a call such as ceil(n / 256), or'],
    [
      'n\u0000',
      'Expected a number, a name or one of + - * / % << ( ) , for the dimension expression at column 2 ' +
        'but received U+0000\n  n\ufffd\n   ^',
    ],
    [
      'sqrt(n)',
      'Expected a function (ceil, floor, min, max, cdiv) for the dimension expression at column 1 but ' +
        "received the name 'sqrt'",
    ],
    ['ceil + 1', "Expected '(' after the function ceil for the dimension expression at column 6 but received '+'"],
    ['ceil()', 'Expected 1 argument to ceil for the dimension expression at column 1 but received 0'],
    ['floor(1, 2)', 'Expected 1 argument to floor for the dimension expression at column 1 but received 2'],
    ['cdiv(1)', 'Expected 2 arguments to cdiv for the dimension expression at column 1 but received 1'],
    ['max()', 'Expected at least 1 argument to max for the dimension expression at column 1 but received 0'],
  ];
  it.each(table)('%j', (text, message) => {
    const e = errorOf(() => parseDimExpr(text));
    expect(e).toBeInstanceOf(TypeError);
    expect(e.message.startsWith(message)).toBe(true);
  });

  it('names the expression by its label, and rejects what is not text or a safe integer', () => {
    expect(errorOf(() => parseDimExpr('n +', 'job.grid[0]')).message).toMatch(
      /^Expected an operand .* for job.grid\[0]/,
    );
    const notText = errorOf(() => parseDimExpr({} as string));
    expect(notText).toBeInstanceOf(TypeError);
    expect(notText.message).toBe(
      "Expected a string such as 'ceil(n / 256)' or a safe integer for the dimension expression but received an " +
        'object of type Object',
    );
    const half = errorOf(() => parseDimExpr(1.5, 'block'));
    expect(half).toBeInstanceOf(RangeError);
    expect(half.message).toBe(
      "Expected a string such as 'ceil(n / 256)' or a safe integer for block but received 1.5 of type number",
    );
  });
});

describe('parseDimExpr: limits', () => {
  const rangeErrorOf = (text: string): string => {
    const e = errorOf(() => parseDimExpr(text));
    expect(e).toBeInstanceOf(RangeError);
    return e.message;
  };

  it('bounds the length', () => {
    expect(() => parseDimExpr(`n${' '.repeat(DIM_EXPR_LIMITS.maxChars - 1)}`)).not.toThrow();
    expect(rangeErrorOf('n'.repeat(300))).toBe(
      'Expected at most 256 characters for the dimension expression but received 300',
    );
  });

  it('bounds the tokens', () => {
    expect(() => parseDimExpr(`${'1+'.repeat(63)}1`)).not.toThrow(); // 127 tokens
    expect(rangeErrorOf(`${'1+'.repeat(64)}1`).split('\n')[0]).toBe(
      'Expected at most 128 tokens (numbers, names, operators, parentheses, commas) for the dimension expression at ' +
        'column 129 but received more',
    );
  });

  it('bounds the nesting of parentheses, calls and unary minus', () => {
    expect(() => parseDimExpr(`${'('.repeat(32)}n${')'.repeat(32)}`)).not.toThrow();
    expect(rangeErrorOf(`${'('.repeat(33)}n${')'.repeat(33)}`).split('\n')[0]).toBe(
      'Expected at most 32 levels of nesting (parentheses, calls, unary minus) for the dimension expression at ' +
        'column 33 but received deeper nesting',
    );
    expect(rangeErrorOf(`${'-'.repeat(33)}n`)).toContain('Expected at most 32 levels of nesting');
    expect(rangeErrorOf(`${'ceil('.repeat(33)}n${')'.repeat(33)}`)).toContain('Expected at most 32 levels of nesting');
    // A long chain of one level is not nesting: its tree is deep, but the parser loops over it.
    expect(evalDimExpr(`${'1+'.repeat(60)}1`, {})).toBe(61);
  });

  it('bounds a literal', () => {
    expect(rangeErrorOf('9007199254740992')).toBe(
      'Expected an integer literal of at most 9007199254740991 for the dimension expression at column 1 but received ' +
        '9007199254740992\n  9007199254740992\n  ^',
    );
    expect(rangeErrorOf('9'.repeat(200))).toContain(`received ${'9'.repeat(40)}… (200 digits)`);
  });
});

describe('evalDimExpr: errors', () => {
  const rangeErrorOf = (f: () => unknown): string => {
    const e = errorOf(f);
    expect(e).toBeInstanceOf(RangeError);
    return e.message;
  };

  it('names an unknown dimension and lists the known ones', () => {
    const e = errorOf(() => evalDimExpr('ceil(q / 256)', { m: 1, n: 2 }));
    expect(e).toBeInstanceOf(TypeError);
    expect(e.message).toBe("Unknown dimension 'q' in the dimension expression 'ceil(q / 256)'; known dimensions: m, n");
    expect(errorOf(() => evalDimExpr('n', {})).message).toBe(
      "Unknown dimension 'n' in the dimension expression 'n'; known dimensions: none",
    );
    // Only own properties are dimensions: the prototype's names are not.
    for (const name of ['constructor', 'toString', '__proto__', 'hasOwnProperty']) {
      expect(errorOf(() => evalDimExpr(name, {}))).toBeInstanceOf(TypeError);
    }
  });

  it('checks the values it uses, and dims itself', () => {
    expect(errorOf(() => evalDimExpr('n', { n: '4' as unknown as number })).message).toBe(
      "Expected a safe integer for dims.n but received '4' of type string",
    );
    expect(rangeErrorOf(() => evalDimExpr('n', { n: 1.5 }))).toBe(
      'Expected a safe integer for dims.n but received 1.5 of type number',
    );
    expect(rangeErrorOf(() => evalDimExpr('n', { n: 1n << 60n }))).toBe(
      'Expected a safe integer for dims.n but received 1152921504606846976n of type bigint',
    );
    expect(evalDimExpr('n', { n: 3, m: Number.NaN })).toBe(3); // m is not used
    expect(errorOf(() => evalDimExpr('1', null as never))).toBeInstanceOf(TypeError);
  });

  it('refuses division by zero, with the column and the values', () => {
    expect(rangeErrorOf(() => evalDimExpr('n / (m - m)', { n: 8, m: 4 }))).toBe(
      "Expected a non-zero divisor for the dimension expression 'n / (m - m)' but received 0 at column 3 with n = 8, " +
        'm = 4',
    );
    expect(rangeErrorOf(() => evalDimExpr('n % 0', { n: 8 }))).toContain('Expected a non-zero divisor');
    expect(rangeErrorOf(() => evalDimExpr('cdiv(n, 0)', { n: 8 }))).toContain('Expected a non-zero divisor');
  });

  it('bounds the shift amount', () => {
    expect(rangeErrorOf(() => evalDimExpr('1 << 65', {}))).toBe(
      "Expected a shift amount that is an integer in [0, 64] for the dimension expression '1 << 65' but received 65 " +
        'at column 3',
    );
    expect(rangeErrorOf(() => evalDimExpr('1 << -1', {}))).toContain('received -1 at column 3');
    expect(rangeErrorOf(() => evalDimExpr('1 << (1 / 2)', {}))).toContain('received 1/2 at column 3');
  });

  it('bounds every intermediate value to 128 bits', () => {
    expect(rangeErrorOf(() => evalDimExpr('(1 << 64) * (1 << 64) / (1 << 100)', {}))).toBe(
      "Expected values below 2^128 in magnitude for the dimension expression '(1 << 64) * (1 << 64) / (1 << 100)' " +
        'but received a value of 129 bits at column 11',
    );
    expect(evalDimExpr('(1 << 63) * (1 << 64) / (1 << 50) / (1 << 50)', {})).toBe(2 ** 27);
    expect(rangeErrorOf(() => evalDimExpr('1 / n / n / n / n / n', { n: 1 << 30 }))).toContain(
      'but received a fraction whose denominator has 151 bits',
    );
  });

  it('wants an integer in the end, naming the expression and the case', () => {
    expect(rangeErrorOf(() => evalDimExpr('n / 3', { n: 1000 }))).toBe(
      "Expected an integer (round the quotient with ceil() or floor()) for the dimension expression 'n / 3' but " +
        'received 1000/3 with n = 1000',
    );
    expect(rangeErrorOf(() => evalDimExpr('-7 / 2', {}))).toContain('received -7/2');
  });

  it('wants a safe integer within [min, max]', () => {
    expect(rangeErrorOf(() => evalDimExpr('1 << 60', {}))).toBe(
      "Expected a safe integer (at most 2^53 - 1 in magnitude) for the dimension expression '1 << 60' but received " +
        '1152921504606846976',
    );
    expect(rangeErrorOf(() => evalDimExpr('n - 300', { n: 256 }, { label: 'job.grid[0]', min: 1 }))).toBe(
      "Expected a positive integer for job.grid[0] ('n - 300') but received -44 with n = 256",
    );
    expect(rangeErrorOf(() => evalDimExpr('-k', { k: 1 }, { min: 0 }))).toBe(
      "Expected a non-negative integer for the dimension expression '-k' but received -1 with k = 1",
    );
    expect(rangeErrorOf(() => evalDimExpr('2048', {}, { min: 1, max: 1024 }))).toBe(
      "Expected an integer in [1, 1024] for the dimension expression '2048' but received 2048",
    );
  });

  it('checks its options', () => {
    expect(errorOf(() => evalDimExpr('1', {}, { mni: 1 } as never)).message).toBe(
      'Unknown option options.mni; known options: label, min, max',
    );
    expect(errorOf(() => evalDimExpr('1', {}, { min: 2, max: 1 }))).toBeInstanceOf(RangeError);
    expect(errorOf(() => evalDimExpr('1', {}, { label: 1 as never }))).toBeInstanceOf(TypeError);
    expect(errorOf(() => evalDimExpr({ txt: 'n' } as never, {}))).toBeInstanceOf(TypeError);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Properties

/** Only the two documented types, and exactly them (not a subclass that slipped out of a dependency). */
function expectDocumentedError(e: unknown): void {
  expect(e).toBeInstanceOf(Error);
  expect([TypeError, RangeError]).toContain((e as Error).constructor);
}

/** Text built from the grammar's own pieces, so that most of it gets past the first character. */
const PIECES = [
  ...'0 1 7 256 1_0 _ n m k q ceil floor min max cdiv ( ) , + - * / % << < . # \u00e9'.split(' '),
  ' ',
  '\t',
];

describe('dimension expressions: properties', () => {
  it('throw nothing but TypeError or RangeError on any text', () => {
    const texts = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 300 }),
      fc.array(fc.constantFrom(...PIECES), { maxLength: 80 }).map((p) => p.join('')),
    );
    fc.assert(
      fc.property(texts, (text) => {
        try {
          evalDimExpr(parseDimExpr(text), { m: 3, n: 1 << 20, k: 0 });
        } catch (e) {
          expectDocumentedError(e);
        }
      }),
      { numRuns: 2000 },
    );
    fc.assert(
      fc.property(fc.anything(), fc.anything(), (text, dims) => {
        try {
          evalDimExpr(text as string, dims as Record<string, number>);
        } catch (e) {
          expectDocumentedError(e);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('agree with a BigInt reference evaluator on random small trees', () => {
    fc.assert(
      fc.property(tree, dimValues, fc.boolean(), (t, dims, spaced) => {
        const text = print(t, spaced).text;
        fc.pre(text.length <= DIM_EXPR_LIMITS.maxTokens); // then within every limit of the parser
        let expected: number | string;
        try {
          expected = referenceValue(t, dims);
        } catch (e) {
          if (!(e instanceof ReferenceFailure)) throw e;
          expected = e.kind;
        }
        let actual: number | string;
        try {
          actual = evalDimExpr(text, dims);
        } catch (e) {
          expect(e).toBeInstanceOf(RangeError);
          actual = failureKind((e as Error).message);
        }
        expect(actual, text).toBe(expected);
      }),
      { numRuns: 1000 },
    );
  });
});

type Tree =
  | { k: 'int'; v: number }
  | { k: 'name'; name: 'm' | 'n' | 'k' }
  | { k: 'paren'; a: Tree }
  | { k: 'neg'; a: Tree }
  | { k: 'op'; op: '+' | '-' | '*' | '/' | '%' | '<<'; a: Tree; b: Tree }
  | { k: 'call'; fn: 'ceil' | 'floor' | 'min' | 'max' | 'cdiv'; args: Tree[] };

const { tree } = fc.letrec<{ tree: Tree }>((go) => ({
  tree: fc.oneof(
    { depthSize: 'small', maxDepth: 4 },
    fc.oneof(fc.integer({ min: 0, max: 20 }), fc.integer({ min: 0, max: 2 ** 32 })).map((v): Tree => ({ k: 'int', v })),
    fc.constantFrom('m', 'n', 'k').map((name): Tree => ({ k: 'name', name })),
    go('tree').map((a): Tree => ({ k: 'paren', a })),
    go('tree').map((a): Tree => ({ k: 'neg', a })),
    fc
      .tuple(fc.constantFrom('+', '-', '*', '/', '%', '<<'), go('tree'), go('tree'))
      .map(([op, a, b]): Tree => ({ k: 'op', op, a, b })),
    fc.tuple(fc.constantFrom('ceil', 'floor'), go('tree')).map(([fn, a]): Tree => ({ k: 'call', fn, args: [a] })),
    fc
      .tuple(fc.constantFrom('min', 'max'), fc.array(go('tree'), { minLength: 1, maxLength: 3 }))
      .map(([fn, args]): Tree => ({ k: 'call', fn, args })),
    fc.tuple(go('tree'), go('tree')).map(([a, b]): Tree => ({ k: 'call', fn: 'cdiv', args: [a, b] })),
  ),
}));

const dimValues = fc.record({
  m: fc.integer({ min: -1000, max: 1 << 20 }),
  n: fc.integer({ min: 0, max: 300 }),
  k: fc.integer({ min: -5, max: 5 }),
});

const PRECEDENCE = { '<<': 0, '+': 1, '-': 1, '*': 2, '/': 2, '%': 2 } as const;
const UNARY = 3;
const ATOM = 4;

/** The tree as text with the fewest parentheses (plus those of its 'paren' nodes), and its precedence. */
function print(t: Tree, spaced: boolean): { text: string; precedence: number } {
  const wrap = (child: Tree, needs: (p: number) => boolean): string => {
    const c = print(child, spaced);
    return needs(c.precedence) ? `(${c.text})` : c.text;
  };
  switch (t.k) {
    case 'int':
      return { text: String(t.v), precedence: ATOM };
    case 'name':
      return { text: t.name, precedence: ATOM };
    case 'paren':
      return { text: `(${print(t.a, spaced).text})`, precedence: ATOM };
    case 'neg':
      return { text: `-${wrap(t.a, (p) => p < UNARY)}`, precedence: UNARY };
    case 'op': {
      const p = PRECEDENCE[t.op];
      // Operators associate left, so a right operand of the same level needs its parentheses.
      const sep = spaced ? ' ' : '';
      const text = `${wrap(t.a, (q) => q < p)}${sep}${t.op}${sep}${wrap(t.b, (q) => q <= p)}`;
      return { text, precedence: p };
    }
    case 'call':
      return {
        text: `${t.fn}(${t.args.map((a) => print(a, spaced).text).join(spaced ? ', ' : ',')})`,
        precedence: ATOM,
      };
  }
}

class ReferenceFailure extends Error {
  constructor(readonly kind: 'divisor' | 'shift' | 'bits' | 'integer' | 'safe') {
    super(kind);
  }
}

/** The failure an evalDimExpr() message reports. */
function failureKind(message: string): string {
  if (message.startsWith('Expected a non-zero divisor')) return 'divisor';
  if (message.startsWith('Expected a shift amount')) return 'shift';
  if (message.startsWith('Expected values below 2^128')) return 'bits';
  if (message.startsWith('Expected an integer (round')) return 'integer';
  if (message.startsWith('Expected a safe integer')) return 'safe';
  return message;
}

/** A fraction p/q in lowest terms, q > 0: the textbook way, independent of the library's. */
type Fraction = [p: bigint, q: bigint];

function reduce(p: bigint, q: bigint): Fraction {
  if (q < 0n) [p, q] = [-p, -q];
  let [a, b] = [p < 0n ? -p : p, q];
  while (b > 0n) [a, b] = [b, a % b];
  return [p / a, q / a]; // a > 0: q > 0
}

/** The greatest integer at most p/q. */
const floorDiv = ([p, q]: Fraction): bigint => (p >= 0n ? p / q : -((-p + q - 1n) / q));

function referenceValue(t: Tree, dims: Record<'m' | 'n' | 'k', number>): number {
  const limit = 1n << 128n;
  const checked = (f: Fraction): Fraction => {
    if (f[0] >= limit || -f[0] >= limit || f[1] >= limit) throw new ReferenceFailure('bits');
    return f;
  };
  const nonZero = (f: Fraction): Fraction => {
    if (f[0] === 0n) throw new ReferenceFailure('divisor');
    return f;
  };
  const value = (t: Tree): Fraction => {
    switch (t.k) {
      case 'int':
        return [BigInt(t.v), 1n];
      case 'name':
        return [BigInt(dims[t.name]), 1n];
      case 'paren':
        return value(t.a);
      case 'neg': {
        const [p, q] = value(t.a);
        return [-p, q];
      }
      case 'op': {
        const [[a, b], [c, d]] = [value(t.a), value(t.b)];
        switch (t.op) {
          case '+':
            return checked(reduce(a * d + c * b, b * d));
          case '-':
            return checked(reduce(a * d - c * b, b * d));
          case '*':
            return checked(reduce(a * c, b * d));
          case '/':
            nonZero([c, d]);
            return checked(reduce(a * d, b * c));
          case '%': {
            nonZero([c, d]);
            const quotient = floorDiv(reduce(a * d, b * c));
            return checked(reduce(a * d - quotient * c * b, b * d));
          }
          case '<<':
            if (d !== 1n || c < 0n || c > 64n) throw new ReferenceFailure('shift');
            return checked(reduce(a * 2n ** c, b));
        }
      }
      case 'call': {
        const args = t.args.map(value);
        const less = (x: Fraction, y: Fraction): boolean => x[0] * y[1] < y[0] * x[1];
        switch (t.fn) {
          case 'ceil':
            return checked([-floorDiv([-args[0]![0], args[0]![1]]), 1n]);
          case 'floor':
            return checked([floorDiv(args[0]!), 1n]);
          case 'min':
            return checked(args.reduce((x, y) => (less(y, x) ? y : x)));
          case 'max':
            return checked(args.reduce((x, y) => (less(x, y) ? y : x)));
          case 'cdiv': {
            const [[a, b], [c, d]] = [args[0]!, nonZero(args[1]!)];
            const [p, q] = reduce(a * d, b * c);
            return checked([-floorDiv([-p, q]), 1n]);
          }
        }
      }
    }
  };
  const [p, q] = value(t);
  if (q !== 1n) throw new ReferenceFailure('integer');
  if (p > BigInt(Number.MAX_SAFE_INTEGER) || -p > BigInt(Number.MAX_SAFE_INTEGER)) throw new ReferenceFailure('safe');
  return Number(p);
}
