/**
 * Small hand-made SVG charts for the console: bars (stacked or side by side) and lines over named
 * categories (days, stages…), with a value axis, category labels and a legend. Each chart is an
 * image named by its title for screen readers, followed by a visually hidden table of the same
 * numbers — what a screen reader can actually read. Colours come from styles.css (`.chart .tone-N`);
 * the legend and the table name each series too, so colour is never the only cue.
 */
import type { ComponentChildren } from 'preact';
import { useId } from 'preact/hooks';

export interface Series {
  label: string;
  values: Array<number | null>;
}

export interface ChartProps {
  title: string;
  /** The x axis: one label per category (a day, a stage). */
  categories: string[];
  series: Series[];
  /** The value axis's name ("calls", "ms"). */
  unit: string;
  format?: (value: number) => string;
}

const WIDTH = 640;
const HEIGHT = 240;
const LEFT = 52;
const RIGHT = 12;
const TOP = 12;
const BOTTOM = 44;
const PLOT_W = WIDTH - LEFT - RIGHT;
const PLOT_H = HEIGHT - TOP - BOTTOM;
/** At most this many category labels, so they never overlap. */
const MAX_LABELS = 10;

const plain = (value: number) => (Number.isInteger(value) ? String(value) : value.toFixed(1));

/** A round top for the axis (1, 2, 5 × 10ⁿ) at or above `max`, and its ticks. */
export function niceScale(max: number, ticks = 4): number[] {
  const top = max > 0 ? max : 1;
  const rough = top / ticks;
  const power = 10 ** Math.floor(Math.log10(rough));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= rough) ?? 10 * power;
  const count = Math.ceil(top / step);
  return Array.from({ length: count + 1 }, (_, i) => i * step);
}

/** The frame every chart shares: axes, grid, labels, legend, and the table for screen readers. */
function Frame(props: ChartProps & { top: number; children: ComponentChildren; ticks: number[] }) {
  const id = useId();
  const format = props.format ?? plain;
  const every = Math.ceil(props.categories.length / MAX_LABELS);
  const band = PLOT_W / Math.max(1, props.categories.length);
  const y = (value: number) => TOP + PLOT_H - (value / props.top) * PLOT_H;
  return (
    <figure class="chart">
      <figcaption id={`${id}-title`}>{props.title}</figcaption>
      <svg viewBox={`0 0 ${WIDTH} ${HEIGHT}`} role="img" aria-labelledby={`${id}-title`}>
        <title>{props.title}</title>
        {props.ticks.map((tick) => (
          <g key={tick} class="grid">
            <line x1={LEFT} x2={WIDTH - RIGHT} y1={y(tick)} y2={y(tick)} />
            <text x={LEFT - 6} y={y(tick)} text-anchor="end" dominant-baseline="middle">
              {format(tick)}
            </text>
          </g>
        ))}
        <text class="axis-name" x={4} y={TOP} dominant-baseline="hanging">
          {props.unit}
        </text>
        {props.categories.map((category, index) =>
          index % every === 0 ? (
            <text
              key={category}
              class="category"
              x={LEFT + band * (index + 0.5)}
              y={HEIGHT - BOTTOM + 16}
              text-anchor="middle"
            >
              {category}
            </text>
          ) : null,
        )}
        {props.children}
      </svg>
      <ul class="legend" aria-hidden="true">
        {props.series.map((series, index) => (
          <li key={series.label}>
            <span class={`swatch tone-${index}`} /> {series.label}
          </li>
        ))}
      </ul>
      <table class="visually-hidden">
        <caption>{props.title}</caption>
        <thead>
          <tr>
            <th scope="col">
              <span class="visually-hidden">Category</span>
            </th>
            {props.series.map((series) => (
              <th scope="col" key={series.label}>
                {series.label}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {props.categories.map((category, index) => (
            <tr key={category}>
              <th scope="row">{category}</th>
              {props.series.map((series) => {
                const value = series.values[index];
                return (
                  <td key={series.label}>{value === null || value === undefined ? '—' : format(value)}</td>
                );
              })}
            </tr>
          ))}
        </tbody>
      </table>
    </figure>
  );
}

/** Bars per category: the series stacked on each other (parts of a whole), or side by side. */
export function BarChart(props: ChartProps & { stacked?: boolean }) {
  const { categories, series, stacked } = props;
  const value = (s: Series, i: number) => s.values[i] ?? 0;
  const heights = categories.map((_, i) =>
    stacked
      ? series.reduce((sum, s) => sum + value(s, i), 0)
      : Math.max(0, ...series.map((s) => value(s, i))),
  );
  const ticks = niceScale(Math.max(0, ...heights));
  const top = ticks.at(-1) ?? 1;
  const band = PLOT_W / Math.max(1, categories.length);
  const gap = band * 0.2;
  const width = stacked ? band - gap : (band - gap) / Math.max(1, series.length);
  const h = (v: number) => (v / top) * PLOT_H;
  return (
    <Frame {...props} top={top} ticks={ticks}>
      {categories.map((category, i) => {
        let base = TOP + PLOT_H;
        return (
          <g key={category}>
            {series.map((s, k) => {
              const v = value(s, i);
              if (v <= 0) return null;
              const x = LEFT + band * i + gap / 2 + (stacked ? 0 : k * width);
              const y = stacked ? base - h(v) : TOP + PLOT_H - h(v);
              if (stacked) base -= h(v);
              return (
                <rect key={s.label} class={`tone-${k}`} x={x} y={y} width={width} height={h(v)}>
                  <title>{`${category} · ${s.label}: ${(props.format ?? plain)(v)}`}</title>
                </rect>
              );
            })}
          </g>
        );
      })}
    </Frame>
  );
}

/** One line per series across the categories; a missing value breaks the line. */
export function LineChart(props: ChartProps) {
  const all = props.series.flatMap((s) => s.values.filter((v): v is number => typeof v === 'number'));
  const ticks = niceScale(Math.max(0, ...all));
  const top = ticks.at(-1) ?? 1;
  const band = PLOT_W / Math.max(1, props.categories.length);
  const point = (v: number, i: number) => `${LEFT + band * (i + 0.5)},${TOP + PLOT_H - (v / top) * PLOT_H}`;
  return (
    <Frame {...props} top={top} ticks={ticks}>
      {props.series.map((s, k) => {
        const runs: string[][] = [[]];
        s.values.forEach((v, i) => {
          if (typeof v === 'number') runs.at(-1)!.push(point(v, i));
          else if (runs.at(-1)!.length > 0) runs.push([]);
        });
        return (
          <g key={s.label} class={`line tone-${k}`}>
            {runs
              .filter((run) => run.length > 0)
              .map((run) => (
                <polyline key={run[0]} points={run.join(' ')} />
              ))}
            {s.values.map((v, i) =>
              typeof v === 'number' ? (
                <circle
                  key={props.categories[i]}
                  cx={point(v, i).split(',')[0]}
                  cy={point(v, i).split(',')[1]}
                  r={3}
                />
              ) : null,
            )}
          </g>
        );
      })}
    </Frame>
  );
}
