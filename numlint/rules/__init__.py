"""Rules, one per file, grouped by category; found automatically by numlint.rule.all_rules()."""
