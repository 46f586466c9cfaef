#!/usr/bin/python3
# tests/k8s/strict.py - the unknown-field and type check that a JSON schema
# of Kubernetes' OpenAPI does not make (it allows fields it does not name,
# so a misplaced "hostPID" or a misspelt "volumeMount" passes it), with
# the API models of Debian 12's python3-kubernetes (22.6.0: Kubernetes
# 1.22's API): every field of every object must be one its model names
# (attribute_map), of the model's type (openapi_types), and every field a
# model requires must be there.  As the API server's strict field
# validation (kubectl apply --validate=strict) refuses unknown fields.
#
#   /usr/bin/python3 tests/k8s/strict.py FILE
#
# FILE: a JSON object {"NAME": [object, ...], ...}; prints a JSON object
# {"NAME": ["problem", ...], ...}.  Objects whose kind has no model here
# (a CRD's, e.g. ServiceMonitor) get ["no model"].  Exit 0 when it ran,
# 2 when python3-kubernetes is missing or FILE cannot be read.
import inspect
import json
import re
import sys

try:
    import kubernetes.client as k8s
except ImportError:
    print("strict.py: python3-kubernetes is not installed "
          "(apt-get install python3-kubernetes)", file=sys.stderr)
    sys.exit(2)

# apiVersion/kind -> the model (named by version and kind: V1DaemonSet for
# apps/v1 DaemonSet); a group the client has no models for (a CRD's) has
# none.
K8S_GROUPS = ("", "apps", "batch", "policy", "rbac.authorization.k8s.io",
              "networking.k8s.io", "scheduling.k8s.io", "storage.k8s.io",
              "node.k8s.io")


def model_for(obj):
    group, _, version = obj.get("apiVersion", "").rpartition("/")
    if group not in K8S_GROUPS:
        return None
    return getattr(k8s, version.capitalize() + obj.get("kind", ""), None)


def required_fields(cls):
    # the generated setters raise ValueError for None in required fields
    req = []
    for attr in cls.openapi_types:
        prop = getattr(cls, attr, None)
        if isinstance(prop, property) and prop.fset is not None:
            src = inspect.getsource(prop.fset)
            if re.search(r"if self\.local_vars_configuration\.client_side_validation and %s is None" % attr, src):
                req.append(attr)
    return req


def check(value, typ, where, out):
    if typ in ("str",):
        if not isinstance(value, str):
            out.append("%s: %r is not a string" % (where, value))
    elif typ in ("int",):
        if not isinstance(value, int) or isinstance(value, bool):
            out.append("%s: %r is not an integer" % (where, value))
    elif typ == "bool":
        if not isinstance(value, bool):
            out.append("%s: %r is not a boolean" % (where, value))
    elif typ in ("object", "float", "datetime", "date"):
        pass
    elif typ.startswith("list["):
        if not isinstance(value, list):
            out.append("%s: not a list" % where)
            return
        for i, v in enumerate(value):
            check(v, typ[5:-1], "%s[%d]" % (where, i), out)
    elif typ.startswith("dict("):
        if not isinstance(value, dict):
            out.append("%s: not a map" % where)
            return
        inner = typ[5:-1].split(", ", 1)[1]
        for k, v in value.items():
            check(v, inner, "%s.%s" % (where, k), out)
    else:
        cls = getattr(k8s, typ, None)
        if cls is None:
            out.append("%s: no model %s" % (where, typ))
            return
        if not isinstance(value, dict):
            out.append("%s: %r is not an object (%s)" % (where, value, typ))
            return
        by_json = {j: a for a, j in cls.attribute_map.items()}
        for k, v in value.items():
            if k not in by_json:
                out.append("%s: unknown field %r in %s" % (where, k, typ))
                continue
            check(v, cls.openapi_types[by_json[k]], "%s.%s" % (where, k), out)
        for a in required_fields(cls):
            if cls.attribute_map[a] not in value:
                out.append("%s: %s lacks its required field %r" % (where, typ, cls.attribute_map[a]))


def main():
    if len(sys.argv) != 2:
        print("usage: strict.py FILE", file=sys.stderr)
        return 2
    try:
        with open(sys.argv[1]) as f:
            sets = json.load(f)
    except (OSError, ValueError) as e:
        print("strict.py: %s: %s" % (sys.argv[1], e), file=sys.stderr)
        return 2
    result = {}
    for name, objs in sets.items():
        out = []
        for obj in objs:
            cls = model_for(obj)
            where = "%s/%s" % (obj.get("kind"), (obj.get("metadata") or {}).get("name"))
            if cls is None:
                out.append("%s: no model" % where)
                continue
            check(obj, cls.__name__, where, out)
        result[name] = out
    json.dump(result, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
