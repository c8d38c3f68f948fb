/**
 * Millionths of a US dollar (the unit every spend figure is kept in) as dollars, computed from the
 * integer so no binary fraction shows: amounts under a cent to four places ($0.0048 for 4,750),
 * the rest to cents, each rounded half up; thousands separated ($1,234.57).
 */
export function formatUsd(microusd: number): string {
  const sign = microusd < 0 ? "-" : "";
  const micro = Math.round(Math.abs(microusd));
  const places = micro > 0 && micro < 10_000 ? 4 : 2;
  const unit = 10 ** (6 - places);
  const scaled = Math.floor((micro + unit / 2) / unit);
  const whole = Math.floor(scaled / 10 ** places);
  const frac = String(scaled % 10 ** places).padStart(places, "0");
  return `${sign}$${String(whole).replace(/\B(?=(\d{3})+$)/g, ",")}.${frac}`;
}
