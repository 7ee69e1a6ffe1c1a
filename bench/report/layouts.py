"""The names of the table and plot layouts and table formats: plain data, so that the command
line can offer them as choices without importing pandas or matplotlib."""

TABLE_FORMATS: tuple[str, ...] = ("md", "latex", "csv")
TABLE_LAYOUTS: tuple[str, ...] = ("default", "table1", "fig6", "fig3", "privacy")
PLOT_LAYOUTS: tuple[str, ...] = ("default", "effective-size")
