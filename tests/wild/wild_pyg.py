"""Graph neural networks from torch_geometric on a small random graph, as its tutorials
write them: a 2-layer GCN and a 2-layer GAT for node classification, called with
(x, edge_index).  Each build() returns (model, example_inputs).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

DEV = "cuda"


def random_graph(nodes=50, edges=200, features=16):
    x = torch.randn(nodes, features, device=DEV)
    edge_index = torch.randint(0, nodes, (2, edges), device=DEV)
    return x, edge_index


class GCN(nn.Module):
    def __init__(self, features=16, hidden=32, classes=4):
        super().__init__()
        from torch_geometric.nn import GCNConv
        self.conv1 = GCNConv(features, hidden)
        self.conv2 = GCNConv(hidden, classes)

    def forward(self, x, edge_index):
        x = F.relu(self.conv1(x, edge_index))
        x = F.dropout(x, p=0.5, training=self.training)
        return F.log_softmax(self.conv2(x, edge_index), dim=1)


class GAT(nn.Module):
    def __init__(self, features=16, hidden=8, heads=4, classes=4):
        super().__init__()
        from torch_geometric.nn import GATConv
        self.conv1 = GATConv(features, hidden, heads=heads)
        self.conv2 = GATConv(hidden * heads, classes, heads=1)

    def forward(self, x, edge_index):
        x = F.elu(self.conv1(x, edge_index))
        return F.log_softmax(self.conv2(x, edge_index), dim=1)


def gcn():
    return GCN().to(DEV).eval(), random_graph()


def gat():
    return GAT().to(DEV).eval(), random_graph()


PROGRAMS = {
    "pyg:gcn": gcn,
    "pyg:gat": gat,
}
