//! The parser kube's rules are parsed with: CEL's standard macros, optional syntax
//! (`a.?b`, `[?x]`) and cel-go's two-variable comprehensions (`all(k, v, p)`,
//! `transformList`, `transformMap`, ...).

use ::cel::common::ast::{
    operators, CallExpr, ComprehensionExpr, Expr, IdedExpr, ListExpr, LiteralValue, MapExpr,
    SourceInfo,
};
use ::cel::parser::{Macro, MacroExprHelper, ParseError, ParseErrors};
use ::cel::Env;
use std::sync::LazyLock;

/// The function inserting into a map accumulator (cel-go's `cel.@mapInsert`).
pub const MAP_INSERT: &str = "cel.@mapInsert";

static ENV: LazyLock<Env> = LazyLock::new(|| {
    let mut env = Env::stdlib();
    for m in two_var_macros() {
        // Each is added once to a fresh environment: duplicates are impossible.
        let _ = env.add_macro(m);
    }
    env
});

/// A parsed expression (macros expanded) and where each of its nodes was written.
#[derive(Debug)]
pub struct Parsed {
    expression: IdedExpr,
    source_info: SourceInfo,
}

impl Parsed {
    /// The root of the expression.
    pub fn expression(&self) -> &IdedExpr {
        &self.expression
    }

    /// The source positions of the expression's nodes.
    pub fn source_info(&self) -> &SourceInfo {
        &self.source_info
    }
}

/// Parse a rule (macros expanded), with cel-go's recursion limit. Callers check
/// [`super::limits`] first: the parser itself recurses per nesting level.
pub fn parse(source: &str) -> Result<Parsed, ParseErrors> {
    ENV.parser()
        .max_recursion_depth(super::limits::MAX_RECURSION_DEPTH as u16)
        .parse_with_source_info(source)
        .map(|(expression, source_info)| Parsed {
            expression,
            source_info,
        })
}

fn ident(helper: &mut MacroExprHelper<'_>, name: &str) -> IdedExpr {
    helper.next_expr(Expr::Ident(name.to_string()))
}

fn call(helper: &mut MacroExprHelper<'_>, f: &str, args: Vec<IdedExpr>) -> IdedExpr {
    helper.next_expr(Expr::Call(CallExpr {
        func_name: f.to_string(),
        target: None,
        args,
    }))
}

fn lit(helper: &mut MacroExprHelper<'_>, v: LiteralValue) -> IdedExpr {
    helper.next_expr(Expr::Literal(v))
}

fn var_name(helper: &MacroExprHelper<'_>, e: &IdedExpr) -> Result<String, ParseError> {
    match &e.expr {
        Expr::Ident(n) => Ok(n.clone()),
        _ => Err(helper.new_error(e.id, "argument must be a simple name")),
    }
}

fn comprehension(
    helper: &mut MacroExprHelper<'_>,
    range: IdedExpr,
    v1: String,
    v2: String,
    init: IdedExpr,
    cond: IdedExpr,
    step: IdedExpr,
) -> IdedExpr {
    let result = ident(helper, "@result");
    helper.next_expr(Expr::Comprehension(Box::new(ComprehensionExpr {
        iter_range: range,
        iter_var: v1,
        iter_var2: Some(v2),
        accu_var: "@result".to_string(),
        accu_init: init,
        loop_cond: cond,
        loop_step: step,
        result,
    })))
}

type Parts = (IdedExpr, String, String, Vec<IdedExpr>);

/// The target, the two variable names and the remaining arguments of a call.
fn parts(
    helper: &MacroExprHelper<'_>,
    target: &mut Option<IdedExpr>,
    args: &mut Vec<IdedExpr>,
) -> Result<Parts, ParseError> {
    let v1 = var_name(helper, &args[0])?;
    let v2 = var_name(helper, &args[1])?;
    if v1 == "@result" || v2 == "@result" {
        return Err(helper.new_error(
            args[0].id,
            "iteration variable overwrites accumulator variable",
        ));
    }
    if v1 == v2 {
        return Err(helper.new_error(args[1].id, "duplicate variable name"));
    }
    let rest = args.split_off(2);
    args.clear();
    let range = target.take().unwrap_or_default();
    Ok((range, v1, v2, rest))
}

fn two_var_macros() -> Vec<Macro> {
    vec![
        Macro::receiver("all", 3, |helper, target, args| {
            let (range, v1, v2, mut rest) = parts(helper, target, args)?;
            let pred = rest.remove(0);
            let init = lit(helper, LiteralValue::Boolean(true.into()));
            let acc = ident(helper, "@result");
            let cond = call(helper, operators::NOT_STRICTLY_FALSE, vec![acc]);
            let acc = ident(helper, "@result");
            let step = call(helper, operators::LOGICAL_AND, vec![acc, pred]);
            Ok(Some(comprehension(helper, range, v1, v2, init, cond, step)))
        }),
        Macro::receiver("exists", 3, |helper, target, args| {
            let (range, v1, v2, mut rest) = parts(helper, target, args)?;
            let pred = rest.remove(0);
            let init = lit(helper, LiteralValue::Boolean(false.into()));
            let acc = ident(helper, "@result");
            let not = call(helper, operators::LOGICAL_NOT, vec![acc]);
            let cond = call(helper, operators::NOT_STRICTLY_FALSE, vec![not]);
            let acc = ident(helper, "@result");
            let step = call(helper, operators::LOGICAL_OR, vec![acc, pred]);
            Ok(Some(comprehension(helper, range, v1, v2, init, cond, step)))
        }),
        Macro::receiver("existsOne", 3, exists_one),
        Macro::receiver("exists_one", 3, exists_one),
        Macro::receiver("transformList", 3, |helper, target, args| {
            transform_list(helper, target, args)
        }),
        Macro::receiver("transformList", 4, |helper, target, args| {
            transform_list(helper, target, args)
        }),
        Macro::receiver("transformMap", 3, |helper, target, args| {
            transform_map(helper, target, args)
        }),
        Macro::receiver("transformMap", 4, |helper, target, args| {
            transform_map(helper, target, args)
        }),
    ]
}

fn exists_one(
    helper: &mut MacroExprHelper<'_>,
    target: &mut Option<IdedExpr>,
    args: &mut Vec<IdedExpr>,
) -> Result<Option<IdedExpr>, ParseError> {
    let (range, v1, v2, mut rest) = parts(helper, target, args)?;
    let pred = rest.remove(0);
    let init = lit(helper, LiteralValue::Int(0.into()));
    let cond = lit(helper, LiteralValue::Boolean(true.into()));
    let acc = ident(helper, "@result");
    let one = lit(helper, LiteralValue::Int(1.into()));
    let inc = call(helper, operators::ADD, vec![acc, one]);
    let acc = ident(helper, "@result");
    let step = call(helper, operators::CONDITIONAL, vec![pred, inc, acc]);
    let c = comprehension(helper, range, v1, v2, init, cond, step);
    let IdedExpr {
        expr: Expr::Comprehension(mut comp),
        id,
    } = c
    else {
        return Ok(None);
    };
    let acc = ident(helper, "@result");
    let one = lit(helper, LiteralValue::Int(1.into()));
    comp.result = call(helper, operators::EQUALS, vec![acc, one]);
    Ok(Some(IdedExpr {
        id,
        expr: Expr::Comprehension(comp),
    }))
}

fn transform_list(
    helper: &mut MacroExprHelper<'_>,
    target: &mut Option<IdedExpr>,
    args: &mut Vec<IdedExpr>,
) -> Result<Option<IdedExpr>, ParseError> {
    let (range, v1, v2, mut rest) = parts(helper, target, args)?;
    let transform = rest.pop().unwrap_or_default();
    let filter = rest.pop();
    let init = helper.next_expr(Expr::List(ListExpr::new(Vec::new())));
    let cond = lit(helper, LiteralValue::Boolean(true.into()));
    let acc = ident(helper, "@result");
    let single = helper.next_expr(Expr::List(ListExpr::new(vec![transform])));
    let mut step = call(helper, operators::ADD, vec![acc, single]);
    if let Some(f) = filter {
        let acc = ident(helper, "@result");
        step = call(helper, operators::CONDITIONAL, vec![f, step, acc]);
    }
    Ok(Some(comprehension(helper, range, v1, v2, init, cond, step)))
}

fn transform_map(
    helper: &mut MacroExprHelper<'_>,
    target: &mut Option<IdedExpr>,
    args: &mut Vec<IdedExpr>,
) -> Result<Option<IdedExpr>, ParseError> {
    let (range, v1, v2, mut rest) = parts(helper, target, args)?;
    let transform = rest.pop().unwrap_or_default();
    let filter = rest.pop();
    let init = helper.next_expr(Expr::Map(MapExpr {
        entries: Vec::new(),
    }));
    let cond = lit(helper, LiteralValue::Boolean(true.into()));
    let acc = ident(helper, "@result");
    let key = ident(helper, &v1);
    let mut step = call(helper, MAP_INSERT, vec![acc, key, transform]);
    if let Some(f) = filter {
        let acc = ident(helper, "@result");
        step = call(helper, operators::CONDITIONAL, vec![f, step, acc]);
    }
    Ok(Some(comprehension(helper, range, v1, v2, init, cond, step)))
}
