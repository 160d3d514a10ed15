#include "dra-agent/kube/cluster_config.h"

#include "common/yaml_tree.h"

namespace dracpu::kube {
namespace {

std::string Quote(std::string_view s) { return "\"" + std::string(s) + "\""; }

std::string DirName(std::string_view path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string_view::npos) return ".";
  if (slash == 0) return "/";
  return std::string(path.substr(0, slash));
}

std::string Resolve(std::string_view base_dir, std::string_view file) {
  if (!file.empty() && file.front() == '/') return std::string(file);
  return base_dir == "." ? std::string(file) : std::string(base_dir) + "/" + std::string(file);
}

Status CheckServer(std::string_view server, std::string_view where) {
  if (server.rfind("https://", 0) != 0 && server.rfind("http://", 0) != 0) {
    return InvalidArgumentError(std::string(where) + ": server " + Quote(server) +
                                " must start with https:// or http://");
  }
  if (const std::string_view authority = server.substr(server.find("://") + 3);
      authority.empty() || authority.front() == '/') {
    return InvalidArgumentError(std::string(where) + ": server " + Quote(server) + " has no host");
  }
  return Status::Ok();
}

std::string TrimSlash(std::string s) {
  while (!s.empty() && s.back() == '/') s.pop_back();
  return s;
}

// Reads kubeconfig entries: a sequence of {name: N, <kind>: {...}}.
class KubeconfigReader {
 public:
  KubeconfigReader(const FileSystem& fs, std::string path, const YamlNode& root)
      : fs_(fs), path_(std::move(path)), dir_(DirName(path_)), root_(root) {}

  Status Error(StatusCode code, std::string_view key, std::string_view what) const {
    return Status(code, "kubeconfig " + path_ + ": " + std::string(key) + ": " + std::string(what));
  }

  // The `body_key` map of the entry named `name` in list `list_key`.
  Result<const YamlNode*> Entry(std::string_view list_key, std::string_view body_key,
                                std::string_view name, std::string_view referenced_by) const {
    const YamlNode* list = root_.Get(list_key);
    if (list != nullptr && list->kind == YamlNode::Kind::kSequence) {
      for (const YamlNode& item : list->items) {
        const YamlNode* n = item.Get("name");
        if (n != nullptr && n->kind == YamlNode::Kind::kScalar && n->scalar == name) {
          const YamlNode* body = item.Get(body_key);
          const std::string key =
              std::string(list_key) + "[name=" + Quote(name) + "]." + std::string(body_key);
          if (body == nullptr || body->kind != YamlNode::Kind::kMap) {
            return Error(StatusCode::kInvalidArgument, key, "missing or not a map");
          }
          return body;
        }
      }
    } else if (list != nullptr && list->kind != YamlNode::Kind::kNull) {
      return Error(StatusCode::kInvalidArgument, list_key, "not a list");
    }
    return Error(
        StatusCode::kInvalidArgument, list_key,
        "no entry named " + Quote(name) + " (referenced by " + std::string(referenced_by) + ")");
  }

  // A scalar string, "" when absent.
  Result<std::string> String(const YamlNode& map, std::string_view key,
                             std::string_view key_path) const {
    const YamlNode* v = map.Get(key);
    if (v == nullptr || v->kind == YamlNode::Kind::kNull) return std::string();
    if (v->kind != YamlNode::Kind::kScalar) {
      return Error(StatusCode::kInvalidArgument, key_path, "must be a string");
    }
    return v->scalar;
  }

  // Content of `<key>-data` (base64) or of the file named by `<key>`, "" when neither is set.
  Result<std::string> DataOrFile(const YamlNode& map, std::string_view prefix, std::string_view key,
                                 std::string_view data_key) const {
    const std::string data_path = std::string(prefix) + "." + std::string(data_key);
    const std::string file_path = std::string(prefix) + "." + std::string(key);
    ASSIGN_OR_RETURN(std::string data, String(map, data_key, data_path));
    ASSIGN_OR_RETURN(std::string file, String(map, key, file_path));
    if (!data.empty()) {
      Result<std::string> decoded = DecodeBase64(data);
      if (!decoded.ok()) {
        return Error(StatusCode::kInvalidArgument, data_path, decoded.status().message());
      }
      return decoded;
    }
    if (!file.empty()) {
      const std::string resolved = Resolve(dir_, file);
      Result<std::string> content = fs_.ReadFile(resolved);
      if (!content.ok()) {
        return Error(content.status().code(), file_path,
                     "cannot read " + Quote(resolved) + ": " + content.status().message());
      }
      return content;
    }
    return std::string();
  }

  std::string Resolved(std::string_view file) const { return Resolve(dir_, file); }

 private:
  const FileSystem& fs_;
  std::string path_;
  std::string dir_;
  const YamlNode& root_;
};

}  // namespace

Result<std::string> DecodeBase64(std::string_view text) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  int quantum = 0;  // characters in the current 4-character group, padding included
  bool padding = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    if (c == '=') {
      if (quantum < 2) return InvalidArgumentError("invalid base64 at offset " + std::to_string(i));
      padding = true;
      quantum = (quantum + 1) % 4;
      continue;
    }
    const int v = value(c);
    if (v < 0 || padding) {
      return InvalidArgumentError("invalid base64 at offset " + std::to_string(i));
    }
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    quantum = (quantum + 1) % 4;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  if (quantum != 0) return InvalidArgumentError("invalid base64: truncated input");
  return out;
}

Result<ClusterConfig> InClusterConfig(const FileSystem& fs, std::string_view host,
                                      std::string_view port, std::string_view sa_dir) {
  if (host.empty() || port.empty()) {
    return FailedPreconditionError(
        "in-cluster config: KUBERNETES_SERVICE_HOST/KUBERNETES_SERVICE_PORT are not set (not "
        "running in a pod?); pass --kubeconfig");
  }
  ClusterConfig config;
  config.source = "in-cluster";
  const bool ipv6 = host.find(':') != std::string_view::npos && host.front() != '[';
  config.server = "https://" + (ipv6 ? "[" + std::string(host) + "]" : std::string(host)) + ":" +
                  std::string(port);
  const std::string dir(sa_dir);
  Result<std::string> ca = fs.ReadFile(dir + "/ca.crt");
  if (!ca.ok()) return ca.status().WithContext("in-cluster config: service account CA");
  config.tls.ca_pem = *std::move(ca);
  config.token_file = dir + "/token";
  Result<std::string> token = fs.ReadFile(config.token_file);
  if (!token.ok()) return token.status().WithContext("in-cluster config: service account token");
  return config;
}

Result<ClusterConfig> LoadKubeconfig(const FileSystem& fs, std::string_view path,
                                     std::string_view context_override) {
  const std::string where = "kubeconfig " + std::string(path);
  Result<std::string> text = fs.ReadFile(path);
  if (!text.ok()) return text.status().WithContext(where);
  Result<YamlNode> parsed = ParseYaml(*text);
  if (!parsed.ok()) return parsed.status().WithContext(where);
  const YamlNode& root = *parsed;
  if (root.kind != YamlNode::Kind::kMap) {
    return InvalidArgumentError(where + ": not a YAML map");
  }
  KubeconfigReader r(fs, std::string(path), root);

  std::string context_name(context_override);
  std::string context_ref = "the context given";
  if (context_name.empty()) {
    ASSIGN_OR_RETURN(context_name, r.String(root, "current-context", "current-context"));
    context_ref = "current-context";
    if (context_name.empty()) {
      return r.Error(StatusCode::kInvalidArgument, "current-context",
                     "not set, and no context was given");
    }
  }
  ASSIGN_OR_RETURN(const YamlNode* context,
                   r.Entry("contexts", "context", context_name, context_ref));
  const std::string context_key = "contexts[name=" + Quote(context_name) + "].context";
  ASSIGN_OR_RETURN(std::string cluster_name,
                   r.String(*context, "cluster", context_key + ".cluster"));
  if (cluster_name.empty()) {
    return r.Error(StatusCode::kInvalidArgument, context_key + ".cluster", "not set");
  }
  ASSIGN_OR_RETURN(std::string user_name, r.String(*context, "user", context_key + ".user"));

  ClusterConfig config;
  config.source = where + " (context " + context_name + ")";
  ASSIGN_OR_RETURN(const YamlNode* cluster,
                   r.Entry("clusters", "cluster", cluster_name, context_key + ".cluster"));
  const std::string cluster_key = "clusters[name=" + Quote(cluster_name) + "].cluster";
  ASSIGN_OR_RETURN(config.server, r.String(*cluster, "server", cluster_key + ".server"));
  if (config.server.empty()) {
    return r.Error(StatusCode::kInvalidArgument, cluster_key + ".server", "not set");
  }
  RETURN_IF_ERROR(CheckServer(config.server, where + ": " + cluster_key));
  config.server = TrimSlash(config.server);
  // Settings that would change where or how we connect: refusing them is safer than ignoring.
  for (std::string_view key : {"proxy-url", "tls-server-name"}) {
    if (cluster->Get(key) != nullptr) {
      return r.Error(StatusCode::kUnimplemented, cluster_key + "." + std::string(key),
                     "not supported by dracpu's client");
    }
  }
  ASSIGN_OR_RETURN(config.tls.ca_pem, r.DataOrFile(*cluster, cluster_key, "certificate-authority",
                                                   "certificate-authority-data"));
  ASSIGN_OR_RETURN(std::string insecure, r.String(*cluster, "insecure-skip-tls-verify",
                                                  cluster_key + ".insecure-skip-tls-verify"));
  if (insecure == "true") {
    config.tls.insecure_skip_verify = true;
  } else if (!insecure.empty() && insecure != "false") {
    return r.Error(StatusCode::kInvalidArgument, cluster_key + ".insecure-skip-tls-verify",
                   "must be true or false, not " + Quote(insecure));
  }

  if (user_name.empty()) return config;  // anonymous, e.g. behind kubectl proxy
  ASSIGN_OR_RETURN(const YamlNode* user,
                   r.Entry("users", "user", user_name, context_key + ".user"));
  const std::string user_key = "users[name=" + Quote(user_name) + "].user";
  for (std::string_view plugin : {"exec", "auth-provider"}) {
    if (user->Get(plugin) != nullptr) {
      return r.Error(StatusCode::kUnimplemented, user_key + "." + std::string(plugin),
                     "credential plugins are not supported; use a token, a token file or a "
                     "client certificate");
    }
  }
  for (std::string_view key : {"as", "as-uid", "as-groups", "as-user-extra"}) {
    if (user->Get(key) != nullptr) {
      return r.Error(StatusCode::kUnimplemented, user_key + "." + std::string(key),
                     "impersonation is not supported by dracpu's client");
    }
  }
  if (user->Get("username") != nullptr || user->Get("password") != nullptr) {
    return r.Error(StatusCode::kUnimplemented, user_key + ".username",
                   "basic authentication is not supported by Kubernetes since 1.19");
  }
  ASSIGN_OR_RETURN(config.bearer_token, r.String(*user, "token", user_key + ".token"));
  ASSIGN_OR_RETURN(std::string token_file, r.String(*user, "tokenFile", user_key + ".tokenFile"));
  if (!token_file.empty()) {
    config.token_file = r.Resolved(token_file);
    Result<std::string> token = fs.ReadFile(config.token_file);
    if (!token.ok()) {
      return r.Error(token.status().code(), user_key + ".tokenFile",
                     "cannot read " + Quote(config.token_file) + ": " + token.status().message());
    }
  }
  ASSIGN_OR_RETURN(config.tls.client_cert_pem,
                   r.DataOrFile(*user, user_key, "client-certificate", "client-certificate-data"));
  ASSIGN_OR_RETURN(config.tls.client_key_pem,
                   r.DataOrFile(*user, user_key, "client-key", "client-key-data"));
  if (config.tls.client_cert_pem.empty() != config.tls.client_key_pem.empty()) {
    return r.Error(
        StatusCode::kInvalidArgument,
        user_key + (config.tls.client_cert_pem.empty() ? ".client-certificate" : ".client-key"),
        "not set, but its pair is");
  }
  return config;
}

}  // namespace dracpu::kube
