//! Function declarations for the type checker: CEL's standard library plus the
//! libraries kube's CRD environment adds (strings v2, lists v3, sets, optionals, two-
//! variable comprehensions; kube's lists, regex, URL, quantity, IP/CIDR, format and
//! semver libraries). Implementations are in [`super::library`] and [`super::kubelib`].

use super::types::Type;
use ::cel::common::ast::operators as ops;
use std::collections::HashMap;
use std::sync::LazyLock;

/// One overload of a function.
#[derive(Debug)]
pub struct Overload {
    /// cel-go's overload id (used by cost estimation).
    pub id: &'static str,
    /// Called as `target.f(args)`; the target is `params[0]`.
    pub member: bool,
    /// Parameter types (type parameters are `Type::Param`).
    pub params: Vec<Type>,
    /// Result type.
    pub result: Type,
}

/// A function and its overloads.
#[derive(Debug, Default)]
pub struct FunctionDecl {
    /// All overloads, global and member.
    pub overloads: Vec<Overload>,
}

/// The formats of kube's format library (`format.dns1123Label()`, ...).
pub const FORMAT_NAMES: [&str; 13] = [
    "dns1123Label",
    "dns1123Subdomain",
    "dns1035Label",
    "qualifiedName",
    "dns1123LabelPrefix",
    "dns1123SubdomainPrefix",
    "dns1035LabelPrefix",
    "labelValue",
    "uri",
    "uuid",
    "byte",
    "date",
    "datetime",
];

/// kube's URL type.
pub const URL: &str = "kubernetes.URL";
/// kube's quantity type.
pub const QUANTITY: &str = "kubernetes.Quantity";
/// kube's IP address type.
pub const IP: &str = "net.IP";
/// kube's CIDR type.
pub const CIDR: &str = "net.CIDR";
/// kube's named format type.
pub const FORMAT: &str = "kubernetes.NamedFormat";
/// kube's semver type.
pub const SEMVER: &str = "kubernetes.Semver";
/// kube's authz library: the `authorizer` variable's type.
pub const AUTHORIZER: &str = "kubernetes.authorization.Authorizer";
/// kube's authz library: `authorizer.path(p)`.
pub const PATH_CHECK: &str = "kubernetes.authorization.PathCheck";
/// kube's authz library: `authorizer.group(g)`.
pub const GROUP_CHECK: &str = "kubernetes.authorization.GroupCheck";
/// kube's authz library: `authorizer.group(g).resource(r)`, `authorizer.requestResource`.
pub const RESOURCE_CHECK: &str = "kubernetes.authorization.ResourceCheck";
/// kube's authz library: the result of `check(verb)`.
pub const DECISION: &str = "kubernetes.authorization.Decision";

/// The declaration of `name`, if it is a function.
pub fn lookup(name: &str) -> Option<&'static FunctionDecl> {
    FUNCTIONS.get(name)
}

fn a() -> Type {
    Type::param("A")
}
fn k() -> Type {
    Type::param("K")
}
fn v() -> Type {
    Type::param("V")
}
fn list(t: Type) -> Type {
    Type::list(t)
}
fn map(kt: Type, vt: Type) -> Type {
    Type::map(kt, vt)
}
fn opt(t: Type) -> Type {
    Type::optional(t)
}

struct Table(HashMap<&'static str, FunctionDecl>);

impl Table {
    fn add(
        &mut self,
        name: &'static str,
        id: &'static str,
        member: bool,
        params: Vec<Type>,
        result: Type,
    ) {
        self.0.entry(name).or_default().overloads.push(Overload {
            id,
            member,
            params,
            result,
        });
    }
    fn g(&mut self, name: &'static str, id: &'static str, params: Vec<Type>, result: Type) {
        self.add(name, id, false, params, result);
    }
    fn m(&mut self, name: &'static str, id: &'static str, params: Vec<Type>, result: Type) {
        self.add(name, id, true, params, result);
    }
}

static FUNCTIONS: LazyLock<HashMap<&'static str, FunctionDecl>> = LazyLock::new(|| {
    use Type::*;
    let mut t = Table(HashMap::new());
    // Operators.
    t.g(ops::LOGICAL_NOT, "logical_not", vec![Bool], Bool);
    t.g(ops::LOGICAL_AND, "logical_and", vec![Bool, Bool], Bool);
    t.g(ops::LOGICAL_OR, "logical_or", vec![Bool, Bool], Bool);
    t.g(
        ops::NOT_STRICTLY_FALSE,
        "not_strictly_false",
        vec![Bool],
        Bool,
    );
    t.g(ops::CONDITIONAL, "conditional", vec![Bool, a(), a()], a());
    t.g(ops::NEGATE, "negate_int64", vec![Int], Int);
    t.g(ops::NEGATE, "negate_double", vec![Double], Double);
    t.g(ops::EQUALS, "equals", vec![a(), a()], Bool);
    t.g(ops::NOT_EQUALS, "not_equals", vec![a(), a()], Bool);
    let comparable: [(Type, Type, &str); 14] = [
        (Bool, Bool, "bool"),
        (Int, Int, "int64"),
        (Int, Uint, "int64_uint64"),
        (Int, Double, "int64_double"),
        (Uint, Uint, "uint64"),
        (Uint, Int, "uint64_int64"),
        (Uint, Double, "uint64_double"),
        (Double, Double, "double"),
        (Double, Int, "double_int64"),
        (Double, Uint, "double_uint64"),
        (String, String, "string"),
        (Bytes, Bytes, "bytes"),
        (Timestamp, Timestamp, "timestamp"),
        (Duration, Duration, "duration"),
    ];
    for (op, prefix) in [
        (ops::LESS, "less"),
        (ops::LESS_EQUALS, "less_equals"),
        (ops::GREATER, "greater"),
        (ops::GREATER_EQUALS, "greater_equals"),
    ] {
        for (x, y, suffix) in &comparable {
            let id: &'static str = Box::leak(format!("{prefix}_{suffix}").into_boxed_str());
            t.g(op, id, vec![x.clone(), y.clone()], Bool);
        }
    }
    t.g(ops::ADD, "add_int64", vec![Int, Int], Int);
    t.g(ops::ADD, "add_uint64", vec![Uint, Uint], Uint);
    t.g(ops::ADD, "add_double", vec![Double, Double], Double);
    t.g(ops::ADD, "add_string", vec![String, String], String);
    t.g(ops::ADD, "add_bytes", vec![Bytes, Bytes], Bytes);
    t.g(ops::ADD, "add_list", vec![list(a()), list(a())], list(a()));
    t.g(
        ops::ADD,
        "add_timestamp_duration",
        vec![Timestamp, Duration],
        Timestamp,
    );
    t.g(
        ops::ADD,
        "add_duration_timestamp",
        vec![Duration, Timestamp],
        Timestamp,
    );
    t.g(
        ops::ADD,
        "add_duration_duration",
        vec![Duration, Duration],
        Duration,
    );
    t.g(ops::SUBSTRACT, "subtract_int64", vec![Int, Int], Int);
    t.g(ops::SUBSTRACT, "subtract_uint64", vec![Uint, Uint], Uint);
    t.g(
        ops::SUBSTRACT,
        "subtract_double",
        vec![Double, Double],
        Double,
    );
    t.g(
        ops::SUBSTRACT,
        "subtract_timestamp_timestamp",
        vec![Timestamp, Timestamp],
        Duration,
    );
    t.g(
        ops::SUBSTRACT,
        "subtract_timestamp_duration",
        vec![Timestamp, Duration],
        Timestamp,
    );
    t.g(
        ops::SUBSTRACT,
        "subtract_duration_duration",
        vec![Duration, Duration],
        Duration,
    );
    for (op, name) in [(ops::MULTIPLY, "multiply"), (ops::DIVIDE, "divide")] {
        let ids: [&'static str; 3] = [
            Box::leak(format!("{name}_int64").into_boxed_str()),
            Box::leak(format!("{name}_uint64").into_boxed_str()),
            Box::leak(format!("{name}_double").into_boxed_str()),
        ];
        t.g(op, ids[0], vec![Int, Int], Int);
        t.g(op, ids[1], vec![Uint, Uint], Uint);
        t.g(op, ids[2], vec![Double, Double], Double);
    }
    t.g(ops::MODULO, "modulo_int64", vec![Int, Int], Int);
    t.g(ops::MODULO, "modulo_uint64", vec![Uint, Uint], Uint);
    t.g(ops::INDEX, "index_list", vec![list(a()), Int], a());
    t.g(ops::INDEX, "index_map", vec![map(k(), v()), k()], v());
    t.g(
        ops::INDEX,
        "optional_list_index_int",
        vec![opt(list(a())), Int],
        opt(a()),
    );
    t.g(
        ops::INDEX,
        "optional_map_index_value",
        vec![opt(map(k(), v())), k()],
        opt(v()),
    );
    t.g(
        ops::OPT_INDEX,
        "list_optindex_optional_int",
        vec![list(a()), Int],
        opt(a()),
    );
    t.g(
        ops::OPT_INDEX,
        "optional_list_optindex_optional_int",
        vec![opt(list(a())), Int],
        opt(a()),
    );
    t.g(
        ops::OPT_INDEX,
        "map_optindex_optional_value",
        vec![map(k(), v()), k()],
        opt(v()),
    );
    t.g(
        ops::OPT_INDEX,
        "optional_map_optindex_optional_value",
        vec![opt(map(k(), v())), k()],
        opt(v()),
    );
    t.g(ops::IN, "in_list", vec![a(), list(a())], Bool);
    t.g(ops::IN, "in_map", vec![k(), map(k(), v())], Bool);
    t.g(
        super::macros::MAP_INSERT,
        "cel_map_insert",
        vec![map(k(), v()), k(), v()],
        map(k(), v()),
    );

    // Standard functions.
    for (id_g, id_m, ty) in [
        ("size_string", "string_size", String),
        ("size_bytes", "bytes_size", Bytes),
        ("size_list", "list_size", list(a())),
        ("size_map", "map_size", map(k(), v())),
    ] {
        t.g("size", id_g, vec![ty.clone()], Int);
        t.m("size", id_m, vec![ty], Int);
    }
    t.m("contains", "contains_string", vec![String, String], Bool);
    t.m(
        "startsWith",
        "starts_with_string",
        vec![String, String],
        Bool,
    );
    t.m("endsWith", "ends_with_string", vec![String, String], Bool);
    t.m("matches", "matches_string", vec![String, String], Bool);
    t.g("matches", "matches", vec![String, String], Bool);
    for (from, id) in [
        (Int, "int64_to_int64"),
        (Uint, "uint64_to_int64"),
        (Double, "double_to_int64"),
        (String, "string_to_int64"),
        (Timestamp, "timestamp_to_int64"),
    ] {
        t.g("int", id, vec![from], Int);
    }
    for (from, id) in [
        (Uint, "uint64_to_uint64"),
        (Int, "int64_to_uint64"),
        (Double, "double_to_uint64"),
        (String, "string_to_uint64"),
    ] {
        t.g("uint", id, vec![from], Uint);
    }
    for (from, id) in [
        (Double, "double_to_double"),
        (Int, "int64_to_double"),
        (Uint, "uint64_to_double"),
        (String, "string_to_double"),
    ] {
        t.g("double", id, vec![from], Double);
    }
    for (from, id) in [
        (String, "string_to_string"),
        (Int, "int64_to_string"),
        (Uint, "uint64_to_string"),
        (Double, "double_to_string"),
        (Bool, "bool_to_string"),
        (Bytes, "bytes_to_string"),
        (Timestamp, "timestamp_to_string"),
        (Duration, "duration_to_string"),
        (Opaque(IP), "ip_to_string"),
        (Opaque(CIDR), "cidr_to_string"),
    ] {
        t.g("string", id, vec![from], String);
    }
    t.g("bytes", "bytes_to_bytes", vec![Bytes], Bytes);
    t.g("bytes", "string_to_bytes", vec![String], Bytes);
    t.g("bool", "bool_to_bool", vec![Bool], Bool);
    t.g("bool", "string_to_bool", vec![String], Bool);
    t.g("duration", "duration_to_duration", vec![Duration], Duration);
    t.g("duration", "string_to_duration", vec![String], Duration);
    t.g(
        "timestamp",
        "timestamp_to_timestamp",
        vec![Timestamp],
        Timestamp,
    );
    t.g("timestamp", "string_to_timestamp", vec![String], Timestamp);
    t.g("timestamp", "int64_to_timestamp", vec![Int], Timestamp);
    t.g("dyn", "to_dyn", vec![a()], Dyn);
    t.g("type", "type", vec![a()], TypeOf(Box::new(a())));
    for getter in [
        "getFullYear",
        "getMonth",
        "getDayOfYear",
        "getDayOfMonth",
        "getDate",
        "getDayOfWeek",
        "getHours",
        "getMinutes",
        "getSeconds",
        "getMilliseconds",
    ] {
        t.m(getter, "timestamp_getter", vec![Timestamp], Int);
        t.m(
            getter,
            "timestamp_getter_with_tz",
            vec![Timestamp, String],
            Int,
        );
    }
    for getter in ["getHours", "getMinutes", "getSeconds", "getMilliseconds"] {
        t.m(getter, "duration_getter", vec![Duration], Int);
    }

    // Optionals.
    t.g("optional.of", "optional_of", vec![a()], opt(a()));
    t.g(
        "optional.ofNonZeroValue",
        "optional_ofNonZeroValue",
        vec![a()],
        opt(a()),
    );
    t.g("optional.none", "optional_none", vec![], opt(a()));
    t.m("hasValue", "optional_hasValue", vec![opt(a())], Bool);
    t.m("value", "optional_value", vec![opt(a())], a());
    t.m(
        "or",
        "optional_or_optional",
        vec![opt(a()), opt(a())],
        opt(a()),
    );
    t.m(
        "orValue",
        "optional_orValue_value",
        vec![opt(a()), a()],
        a(),
    );

    // Strings extension, version 2.
    t.m("charAt", "string_char_at_int", vec![String, Int], String);
    t.m(
        "indexOf",
        "string_index_of_string",
        vec![String, String],
        Int,
    );
    t.m(
        "indexOf",
        "string_index_of_string_int",
        vec![String, String, Int],
        Int,
    );
    t.m(
        "lastIndexOf",
        "string_last_index_of_string",
        vec![String, String],
        Int,
    );
    t.m(
        "lastIndexOf",
        "string_last_index_of_string_int",
        vec![String, String, Int],
        Int,
    );
    t.m("lowerAscii", "string_lower_ascii", vec![String], String);
    t.m("upperAscii", "string_upper_ascii", vec![String], String);
    t.m("trim", "string_trim", vec![String], String);
    t.m(
        "replace",
        "string_replace_string_string",
        vec![String, String, String],
        String,
    );
    t.m(
        "replace",
        "string_replace_string_string_int",
        vec![String, String, String, Int],
        String,
    );
    t.m(
        "split",
        "string_split_string",
        vec![String, String],
        list(String),
    );
    t.m(
        "split",
        "string_split_string_int",
        vec![String, String, Int],
        list(String),
    );
    t.m(
        "substring",
        "string_substring_int",
        vec![String, Int],
        String,
    );
    t.m(
        "substring",
        "string_substring_int_int",
        vec![String, Int, Int],
        String,
    );
    t.m("join", "list_join", vec![list(String)], String);
    t.m(
        "join",
        "list_join_string",
        vec![list(String), String],
        String,
    );
    t.g("strings.quote", "strings_quote", vec![String], String);
    t.m("format", "string_format", vec![String, list(Dyn)], String);

    // kube's lists library.
    t.m("isSorted", "list_is_sorted", vec![list(a())], Bool);
    for (ty, id) in [
        (Int, "list_int_sum"),
        (Uint, "list_uint_sum"),
        (Double, "list_double_sum"),
        (Duration, "list_duration_sum"),
    ] {
        t.m("sum", id, vec![list(ty.clone())], ty);
    }
    t.m("min", "list_min", vec![list(a())], a());
    t.m("max", "list_max", vec![list(a())], a());
    t.m("indexOf", "list_index_of", vec![list(a()), a()], Int);
    t.m(
        "lastIndexOf",
        "list_last_index_of",
        vec![list(a()), a()],
        Int,
    );
    // cel-go's lists extension, version 3.
    t.m("slice", "list_slice", vec![list(a()), Int, Int], list(a()));
    t.m("flatten", "list_flatten", vec![list(list(a()))], list(a()));
    t.m(
        "flatten",
        "list_flatten_int",
        vec![list(Dyn), Int],
        list(Dyn),
    );
    t.m("distinct", "list_distinct", vec![list(a())], list(a()));
    t.m("reverse", "list_reverse", vec![list(a())], list(a()));
    t.m("sort", "list_sort", vec![list(a())], list(a()));
    t.m("first", "list_first", vec![list(a())], opt(a()));
    t.m("last", "list_last", vec![list(a())], opt(a()));
    t.g("lists.range", "lists_range", vec![Int], list(Int));
    // Sets extension.
    for (name, id) in [
        ("sets.contains", "list_sets_contains_list"),
        ("sets.equivalent", "list_sets_equivalent_list"),
        ("sets.intersects", "list_sets_intersects_list"),
    ] {
        t.g(name, id, vec![list(a()), list(a())], Bool);
    }

    // kube's regex library.
    t.m("find", "string_find_string", vec![String, String], String);
    t.m(
        "findAll",
        "string_find_all_string",
        vec![String, String],
        list(String),
    );
    t.m(
        "findAll",
        "string_find_all_string_int",
        vec![String, String, Int],
        list(String),
    );

    // kube's URL library.
    t.g("url", "string_to_url", vec![String], Opaque(URL));
    t.g("isURL", "is_url_string", vec![String], Bool);
    for getter in [
        "getScheme",
        "getHost",
        "getHostname",
        "getPort",
        "getEscapedPath",
    ] {
        t.m(getter, "url_getter", vec![Opaque(URL)], String);
    }
    t.m(
        "getQuery",
        "url_get_query",
        vec![Opaque(URL)],
        map(String, list(String)),
    );

    // kube's quantity library.
    let q = || Opaque(QUANTITY);
    t.g("quantity", "string_to_quantity", vec![String], q());
    t.g("isQuantity", "is_quantity_string", vec![String], Bool);
    t.m("sign", "quantity_sign", vec![q()], Int);
    t.m("isInteger", "quantity_is_integer", vec![q()], Bool);
    t.m("asInteger", "quantity_get_int", vec![q()], Int);
    t.m(
        "asApproximateFloat",
        "quantity_get_float",
        vec![q()],
        Double,
    );
    t.m("add", "quantity_add", vec![q(), q()], q());
    t.m("add", "quantity_add_int", vec![q(), Int], q());
    t.m("sub", "quantity_sub", vec![q(), q()], q());
    t.m("sub", "quantity_sub_int", vec![q(), Int], q());
    t.m("isLessThan", "quantity_less", vec![q(), q()], Bool);
    t.m("isGreaterThan", "quantity_greater", vec![q(), q()], Bool);
    t.m("compareTo", "quantity_compare", vec![q(), q()], Int);

    // kube's IP and CIDR libraries.
    let ip = || Opaque(IP);
    let cidr = || Opaque(CIDR);
    t.g("ip", "string_to_ip", vec![String], ip());
    t.g("isIP", "is_ip", vec![String], Bool);
    t.g("ip.isCanonical", "ip_is_canonical", vec![String], Bool);
    t.m("family", "ip_family", vec![ip()], Int);
    for f in [
        "isUnspecified",
        "isLoopback",
        "isLinkLocalMulticast",
        "isLinkLocalUnicast",
        "isGlobalUnicast",
    ] {
        t.m(f, "ip_predicate", vec![ip()], Bool);
    }
    t.g("cidr", "string_to_cidr", vec![String], cidr());
    t.g("isCIDR", "is_cidr", vec![String], Bool);
    t.m(
        "containsIP",
        "cidr_contains_ip_ip",
        vec![cidr(), ip()],
        Bool,
    );
    t.m(
        "containsIP",
        "cidr_contains_ip_string",
        vec![cidr(), String],
        Bool,
    );
    t.m(
        "containsCIDR",
        "cidr_contains_cidr",
        vec![cidr(), cidr()],
        Bool,
    );
    t.m(
        "containsCIDR",
        "cidr_contains_cidr_string",
        vec![cidr(), String],
        Bool,
    );
    t.m("ip", "cidr_ip", vec![cidr()], ip());
    t.m("masked", "cidr_masked", vec![cidr()], cidr());
    t.m("prefixLength", "cidr_prefix_length", vec![cidr()], Int);

    // kube's format library.
    t.g(
        "format.named",
        "format_named",
        vec![String],
        opt(Opaque(FORMAT)),
    );
    for f in FORMAT_NAMES {
        let name: &'static str = Box::leak(format!("format.{f}").into_boxed_str());
        t.g(name, "format_by_name", vec![], Opaque(FORMAT));
    }
    t.m(
        "validate",
        "format_validate",
        vec![Opaque(FORMAT), String],
        opt(list(String)),
    );

    // kube's semver library.
    let sv = || Opaque(SEMVER);
    t.g("semver", "string_to_semver", vec![String], sv());
    t.g("semver", "string_bool_to_semver", vec![String, Bool], sv());
    t.g("isSemver", "is_semver", vec![String], Bool);
    t.g("isSemver", "is_semver_normalize", vec![String, Bool], Bool);
    t.m("major", "semver_major", vec![sv()], Int);
    t.m("minor", "semver_minor", vec![sv()], Int);
    t.m("patch", "semver_patch", vec![sv()], Int);
    t.m("isLessThan", "semver_less", vec![sv(), sv()], Bool);
    t.m("isGreaterThan", "semver_greater", vec![sv(), sv()], Bool);
    t.m("compareTo", "semver_compare", vec![sv(), sv()], Int);

    // kube's authz library (in every environment; only admission declares a value).
    let (authz, path) = (|| Opaque(AUTHORIZER), || Opaque(PATH_CHECK));
    let (group, res) = (|| Opaque(GROUP_CHECK), || Opaque(RESOURCE_CHECK));
    t.m("path", "authorizer_path", vec![authz(), String], path());
    t.m("group", "authorizer_group", vec![authz(), String], group());
    t.m(
        "serviceAccount",
        "authorizer_serviceaccount",
        vec![authz(), String, String],
        authz(),
    );
    t.m(
        "resource",
        "groupcheck_resource",
        vec![group(), String],
        res(),
    );
    for (f, id) in [
        ("subresource", "resourcecheck_subresource"),
        ("namespace", "resourcecheck_namespace"),
        ("name", "resourcecheck_name"),
        ("fieldSelector", "authorizer_fieldselector"),
        ("labelSelector", "authorizer_labelselector"),
    ] {
        t.m(f, id, vec![res(), String], res());
    }
    t.m(
        "check",
        "pathcheck_check",
        vec![path(), String],
        Opaque(DECISION),
    );
    t.m(
        "check",
        "resourcecheck_check",
        vec![res(), String],
        Opaque(DECISION),
    );
    t.m("errored", "decision_errored", vec![Opaque(DECISION)], Bool);
    t.m("error", "decision_error", vec![Opaque(DECISION)], String);
    t.m("allowed", "decision_allowed", vec![Opaque(DECISION)], Bool);
    t.m("reason", "decision_reason", vec![Opaque(DECISION)], String);
    t.0
});
