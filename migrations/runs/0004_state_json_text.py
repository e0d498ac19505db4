"""A run's state is stored as json text, not jsonb: written whole at every turn and read whole,
it is a quarter smaller as text (hango_project/models.py::TextJSONField)."""

import hango_project.models
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('runs', '0003_run_session_index'),
    ]

    operations = [
        migrations.AlterField(
            model_name='run',
            name='state_json',
            field=hango_project.models.TextJSONField(db_default=models.Value({}, hango_project.models.TextJSONField()), default=dict),
        ),
    ]
